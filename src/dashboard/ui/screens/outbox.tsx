import { Instant, LiveState, Screen } from '../components.js';
import { usePoll, useSession } from '../live.js';
import type { Email, List } from '../types.js';

/** The e-mails the sandbox would have sent the account's owner: a webhook marked failed, so far. */
export function OutboxScreen() {
  const { api } = useSession();
  const live = usePoll(() => api.get<List<Email>>('/_sandbox/emails?limit=100'), [api]);
  const emails = live.data?.data ?? [];
  return (
    <Screen
      title="E-mail outbox"
      intro="What the service would e-mail the account's owner, such as the alert when a webhook is marked failed. Nothing leaves the sandbox."
    >
      <LiveState live={live} what="the outbox" />
      {live.loaded && emails.length === 0 && <p class="muted">No e-mails yet.</p>}
      <ol class="emails">
        {emails.map((email) => (
          <li key={email.id} class="panel">
            <h2>{email.subject}</h2>
            <p class="muted">
              To {email.to}, <Instant value={email.created_at} />
            </p>
            <pre>{email.body}</pre>
          </li>
        ))}
      </ol>
    </Screen>
  );
}
