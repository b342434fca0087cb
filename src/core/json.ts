/**
 * The JSON text of a `T`, serialised once and then stored and sent as it is: a shipment's answer and
 * the `shipment.created` event that carries it are the same bytes, written once.
 */
export type JsonText<T> = string & { readonly __jsonOf?: T };

export const toJsonText = <T>(value: T): JsonText<T> => JSON.stringify(value) as JsonText<T>;
