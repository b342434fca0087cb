import { useState } from 'preact/hooks';
import { ActionButton, ActionForm, Field, Instant, LiveState, Screen, Table } from '../components.js';
import { usePoll, useSession } from '../live.js';
import { type Key, type List, SCOPES } from '../types.js';

/** The account's keys: restricted keys made and revoked. Making one needs a full key (the contract). */
export function KeysScreen() {
  const { api } = useSession();
  const live = usePoll(() => api.get<List<Key>>('/_sandbox/keys'), [api]);
  const keys = live.data?.data ?? [];
  const [name, setName] = useState('');
  const [scopes, setScopes] = useState<string[]>(['shipments:read']);
  const [made, setMade] = useState<{ name: string; value: string } | undefined>(undefined);
  const ownLast4 = api.key.slice(-4);

  const toggle = (scope: string, on: boolean) =>
    setScopes((current) => (on ? [...current, scope] : current.filter((s) => s !== scope)));

  return (
    <Screen
      title="Keys"
      intro="Keys of this account. A key can never make a key with a scope it lacks itself."
    >
      <LiveState live={live} what="the keys" />
      <Table caption="Newest first" head={['Name', 'Key', 'Scopes', 'Created', 'Last used', '']}>
        {keys.map((key) => (
          <tr key={key.id}>
            <td>
              {key.name}
              {key.last4 === ownLast4 && !key.revoked_at && <span class="tag"> this dashboard's key</span>}
            </td>
            <td class="mono">
              …{key.last4}
              <div class="muted">{key.id}</div>
            </td>
            <td>{key.scopes.join(', ')}</td>
            <td>
              <Instant value={key.created_at} />
            </td>
            <td>
              <Instant value={key.last_used_at} />
            </td>
            <td>
              {key.revoked_at ? (
                <span class="muted">
                  revoked <Instant value={key.revoked_at} />
                </span>
              ) : (
                <ActionButton
                  kind="danger"
                  label={`Revoke the key ${key.name}`}
                  run={() => api.delete(`/_sandbox/keys/${key.id}`)}
                  then={() => live.refresh()}
                >
                  Revoke
                </ActionButton>
              )}
            </td>
          </tr>
        ))}
      </Table>
      <section class="panel" aria-labelledby="new-key-title">
        <h2 id="new-key-title">Make a restricted key</h2>
        <ActionForm
          label="Make a key"
          submit="Create key"
          run={() => api.post<{ name: string; value: string }>('/_sandbox/keys', { name, scopes })}
          then={(result) => {
            setMade(result as { name: string; value: string });
            setName('');
            return live.refresh();
          }}
        >
          <Field
            label="Name"
            name="key-name"
            value={name}
            onInput={setName}
            placeholder="ci-readonly"
            required
          />
          <fieldset class="scopes">
            <legend>Scopes</legend>
            {SCOPES.map((scope) => (
              <label key={scope} class="check">
                <input
                  type="checkbox"
                  name="scopes"
                  value={scope}
                  checked={scopes.includes(scope)}
                  onChange={(event) => toggle(scope, (event.target as HTMLInputElement).checked)}
                />{' '}
                {scope}
              </label>
            ))}
          </fieldset>
        </ActionForm>
        {made && (
          <p class="notice" role="status">
            The key {made.name}, shown this once: <code class="secret">{made.value}</code>
          </p>
        )}
      </section>
    </Screen>
  );
}
