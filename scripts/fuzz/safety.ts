/**
 * The fuzzer registers webhooks with generated URLs, and the sandbox sends deliveries to whatever a
 * webhook names. So that no generated value ever makes it call a private or public address, every
 * `url` field of a body, at any depth, that is an http(s) URL of a host other than loopback is replaced
 * by the fuzzer's own receiver before the body is sent. Values that are not URLs go as they are: the
 * sandbox refuses them, which is what they are there to test.
 */
export function keepUrlsOnLoopback(value: unknown, receiverUrl: string): unknown {
  if (Array.isArray(value)) return value.map((item) => keepUrlsOnLoopback(item, receiverUrl));
  if (value === null || typeof value !== 'object') return value;
  const copy: Record<string, unknown> = {};
  for (const [key, field] of Object.entries(value)) {
    const kept =
      key === 'url' && typeof field === 'string' && !isLocalOrNotAUrl(field)
        ? receiverUrl
        : keepUrlsOnLoopback(field, receiverUrl);
    // defineProperty, not assignment: a `__proto__` key must stay an own property of the body.
    Object.defineProperty(copy, key, { value: kept, enumerable: true, writable: true, configurable: true });
  }
  return copy;
}

const LOOPBACK_HOSTS = new Set(['localhost', '[::1]']);

function isLocalOrNotAUrl(text: string): boolean {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    return true;
  }
  // Only http(s) can reach a host; the sandbox refuses the other schemes at registration.
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return true;
  const host = url.hostname.toLowerCase();
  return LOOPBACK_HOSTS.has(host) || /^127\.\d+\.\d+\.\d+$/.test(host);
}
