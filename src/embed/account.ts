import { answerOf } from './answer.js';
import type {
  AdvancedClock,
  ClockState,
  Duration,
  Email,
  SandboxAccount,
  ScenarioRun,
  TrackingRecord,
  TrackingStatus,
} from './types.js';
import { type DeliveryLog, waitForDelivery } from './wait-for-delivery.js';

/** The sandbox's app, called in-process (Hono's `app.request`): no socket, the same routes. */
export type CallApp = (path: string, init: RequestInit) => Response | Promise<Response>;

export interface AccountParts {
  accountId: string;
  apiKey: string;
  origin: string;
  callApp: CallApp;
  deliveries: DeliveryLog;
}

/**
 * The controls of one account, over the sandbox's own `/_sandbox` routes with the account's key:
 * the same checks and answers as a test calling them over HTTP, without the socket. (`/_sandbox` is
 * neither rate limited nor noted in the request journal, so the helpers never count against the
 * account or show up in its integration report.)
 */
export function accountControls(parts: AccountParts): SandboxAccount {
  const { accountId, apiKey, origin, callApp } = parts;

  async function control<T>(method: 'GET' | 'POST', path: string, body?: unknown): Promise<T> {
    const headers: Record<string, string> = { authorization: `Bearer ${apiKey}` };
    if (body !== undefined) headers['content-type'] = 'application/json';
    const response = await callApp(`/_sandbox${path}`, {
      method,
      headers,
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    return answerOf<T>(response);
  }

  const setClock = (change: { speed?: number; frozen?: boolean }) =>
    control<ClockState>('POST', '/clock', change);
  const advance = (request: { by: Duration } | { to: string }) =>
    control<AdvancedClock>('POST', '/clock/advance', request);
  const path = (id: string) => encodeURIComponent(id);
  // The deliveries waitForDelivery has resolved with: the next call waits for another one.
  const handedOut = new Set<string>();

  return {
    accountId,
    apiKey,
    dashboardUrl: `${origin}/dashboard#key=${encodeURIComponent(apiKey)}`,
    clock: {
      now: async () => (await control<ClockState>('GET', '/clock')).now,
      read: () => control<ClockState>('GET', '/clock'),
      advance: (by) => advance({ by }),
      advanceTo: (instant) => advance({ to: typeof instant === 'string' ? instant : instant.toISOString() }),
      freeze: () => setClock({ frozen: true }),
      unfreeze: () => setClock({ frozen: false }),
      setSpeed: (speed) => setClock({ speed }),
    },
    advanceShipment: (shipmentId: string, status: TrackingStatus) =>
      control<TrackingRecord>('POST', `/shipments/${path(shipmentId)}/advance`, { status }),
    runScenario: (shipmentId, scenario) =>
      control<ScenarioRun>('POST', `/shipments/${path(shipmentId)}/scenario`, { name: scenario }),
    waitForDelivery: (filter = {}) =>
      waitForDelivery({
        accountId,
        filter,
        log: parts.deliveries,
        handedOut,
        clockNow: async () => Date.parse((await control<ClockState>('GET', '/clock')).now),
        advanceBy: (seconds) => advance({ by: seconds }),
      }),
    emails: async () => (await control<{ data: Email[] }>('GET', '/emails')).data,
    reset: async () => {
      await control('POST', '/reset');
      handedOut.clear();
    },
  };
}
