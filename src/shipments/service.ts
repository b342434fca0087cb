import { checkAddress, verifyDestination } from '../addresses/verification.js';
import type { Actor } from '../core/actor.js';
import { ApiError, invalidParameter, notFound } from '../core/errors.js';
import { newId } from '../core/ids.js';
import { decodeCursor, encodeCursor, parseLimit } from '../core/paging.js';
import { transaction } from '../db/database.js';
import { voidWithinTransaction } from '../labels/service.js';
import { findCarrier } from '../rates/carriers.js';
import { chooseRate } from '../rates/pricing.js';
import type { State } from '../state.js';
import { type CreateShipmentInput, ShipmentStatusSchema } from './schema.js';
import { presentShipment, type ShipmentRecord } from './store.js';

export const PAGE_SIZE = { default: 20, max: 100 } as const;

/** Validates, verifies and rates the request, then stores the shipment and its event at once. */
export function createShipment(state: State, actor: Actor, input: CreateShipmentInput): ShipmentRecord {
  checkAddress(input.from, 'from');
  checkAddress(input.to, 'to');
  verifyDestination(input.to);
  const quote = chooseRate(
    { carrier: input.carrier, service: input.service },
    input.from,
    input.to,
    input.parcel,
  );

  return transaction(state.db, () => {
    const record = state.shipments.insert({
      id: newId('shp', actor.now),
      accountId: actor.accountId,
      status: 'created',
      carrier: quote.carrier,
      service: quote.service,
      rate: quote.rate,
      from: input.from,
      to: input.to,
      parcel: input.parcel,
      reference: input.reference ?? null,
      createdAt: actor.now,
    });
    state.events.record(actor.accountId, 'shipment.created', presentShipment(record), actor.now);
    return record;
  });
}

export function getShipment(state: State, actor: Actor, id: string): ShipmentRecord {
  const record = state.shipments.find(actor.accountId, id);
  if (!record) throw notFound('shipment', id);
  return record;
}

/**
 * Cancellation is allowed from `created` and `label_generated` only (the specification); a generated
 * label is voided first, so `label.voided` comes before `shipment.cancelled`.
 */
export function cancelShipment(state: State, actor: Actor, id: string): ShipmentRecord {
  return transaction(state.db, () => {
    let record = getShipment(state, actor, id);
    if (record.status !== 'created' && record.status !== 'label_generated') {
      throw new ApiError(
        422,
        'shipment_not_cancellable',
        `Shipment ${id} is ${record.status}; only created or label_generated shipments can be cancelled.`,
      );
    }
    const label = record.labelId === null ? undefined : state.labels.find(actor.accountId, record.labelId);
    if (label?.status === 'active') {
      record = voidWithinTransaction(state, actor, label, record, 'refund_if_eligible').shipment;
    }
    const cancelled = state.shipments.setStatus(record, 'cancelled', actor.now);
    state.events.record(actor.accountId, 'shipment.cancelled', cancelledBody(cancelled), actor.now);
    return cancelled;
  });
}

export function cancelledBody(record: ShipmentRecord): {
  id: string;
  status: 'cancelled';
  cancelled_at: string;
} {
  return { id: record.id, status: 'cancelled', cancelled_at: presentShipment(record).cancelled_at as string };
}

export interface ListQuery {
  limit?: string | undefined;
  cursor?: string | undefined;
  status?: string | undefined;
  carrier?: string | undefined;
}

/** One page of the account's shipments, newest first, with the contract's `meta`. */
export function listShipments(state: State, actor: Actor, query: ListQuery) {
  const limit = parseLimit(query.limit, PAGE_SIZE);
  const after = query.cursor === undefined ? undefined : decodeCursor(query.cursor);
  const status = query.status === undefined ? undefined : ShipmentStatusSchema.safeParse(query.status);
  if (status && !status.success) {
    throw invalidParameter(
      'status',
      `'status' must be one of ${ShipmentStatusSchema.options.join(', ')}; got '${query.status}'.`,
    );
  }
  if (query.carrier !== undefined && !findCarrier(query.carrier)) {
    throw invalidParameter('carrier', `'carrier' must be a carrier slug; '${query.carrier}' is not one.`);
  }
  const filter = { status: status?.data, carrier: query.carrier };
  const { records, hasMore } = state.shipments.page(actor.accountId, filter, limit, after);
  const last = records.at(-1);
  return {
    data: records.map(presentShipment),
    meta: {
      total: state.shipments.count(actor.accountId, filter),
      cursor: hasMore && last ? encodeCursor(last) : null,
      has_more: hasMore,
    },
  };
}
