import { createParser } from 'eventsource-parser';

/** What a stream of server-sent events hands over, as it comes. */
export interface StreamHandlers {
  onEvent(event: string, data: string): void;
  /** A comment line (`: heartbeat`), without its colon and leading space. */
  onComment?(comment: string): void;
  /** Any bytes at all arrived: the connection is alive. */
  onBytes?(): void;
}

/**
 * Hands each event of a stream of server-sent events over until it ends; a connection cut off (the
 * sandbox stopped, or the caller aborted the request) ends it too.
 */
export async function readEvents(response: Response, handlers: StreamHandlers): Promise<void> {
  const parser = createParser({
    onEvent: (message) => handlers.onEvent(message.event ?? 'message', message.data),
    onComment: (comment) => handlers.onComment?.(comment.trim()),
  });
  if (!response.body) return;
  const decoder = new TextDecoder();
  try {
    for await (const chunk of response.body) {
      handlers.onBytes?.();
      parser.feed(decoder.decode(chunk, { stream: true }));
    }
  } catch {
    // The connection was cut: as good as the end of the stream.
  }
}
