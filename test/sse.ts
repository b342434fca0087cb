import { createParser, type EventSourceMessage } from 'eventsource-parser';

/** A stream of server-sent events a test reads, such as `GET /_sandbox/requests/stream`. */
export interface OpenStream {
  status: number;
  contentType: string | null;
  /** Resolves with the next event (comments included, as `{event: 'comment'}`) that `test` accepts. */
  next(test?: (message: EventSourceMessage) => boolean): Promise<EventSourceMessage>;
  /** Every event so far. */
  seen: EventSourceMessage[];
  /** Resolves once the server has ended the stream. */
  ended: Promise<void>;
  close(): void;
}

export async function openStream(
  url: string,
  key: string,
  headers: Record<string, string> = {},
): Promise<OpenStream> {
  const abort = new AbortController();
  const response = await fetch(url, {
    headers: { authorization: `Bearer ${key}`, ...headers },
    signal: abort.signal,
  });
  const seen: EventSourceMessage[] = [];
  const waiters: { test: (m: EventSourceMessage) => boolean; resolve: (m: EventSourceMessage) => void }[] =
    [];
  const hear = (message: EventSourceMessage) => {
    seen.push(message);
    for (const waiter of [...waiters])
      if (waiter.test(message)) {
        waiters.splice(waiters.indexOf(waiter), 1);
        waiter.resolve(message);
      }
  };
  const parser = createParser({
    onEvent: hear,
    onComment: (comment) => hear({ event: 'comment', data: comment.trim() }),
  });
  const ended = (async () => {
    if (!response.body) return;
    const decoder = new TextDecoder();
    try {
      for await (const chunk of response.body)
        parser.feed(decoder.decode(chunk as Uint8Array, { stream: true }));
    } catch {
      // Aborted by the test.
    }
  })();
  return {
    status: response.status,
    contentType: response.headers.get('content-type'),
    seen,
    ended,
    next: (test = () => true) =>
      new Promise((resolve) => {
        const found = seen.find(test);
        if (found) return resolve(found);
        waiters.push({ test, resolve });
      }),
    close: () => abort.abort(),
  };
}
