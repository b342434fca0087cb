/**
 * The JSON text of a `T`, serialised once and then stored and sent as it is: a shipment's answer and
 * the `shipment.created` event that carries it are the same bytes, written once.
 */
export type JsonText<T> = string & { readonly __jsonOf?: T };

export const toJsonText = <T>(value: T): JsonText<T> => JSON.stringify(value) as JsonText<T>;

/**
 * An object as the API shows it, its keys in snake_case like every other field (a scheduled job's
 * payload, say); anything but a plain object is shown as `{ payload }`.
 */
export function snakeCaseKeys(payload: unknown): Record<string, unknown> {
  if (typeof payload !== 'object' || payload === null || Array.isArray(payload)) return { payload };
  return Object.fromEntries(
    Object.entries(payload).map(([key, value]) => [
      key.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`),
      value,
    ]),
  );
}
