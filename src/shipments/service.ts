import { checkAddress, verifyDestination } from '../addresses/verification.js';
import type { Actor } from '../core/actor.js';
import { ApiError, invalidParameter, notFound } from '../core/errors.js';
import { newId } from '../core/ids.js';
import { type JsonText, toJsonText } from '../core/json.js';
import { type CursorCodec, pageMeta, parseLimit } from '../core/paging.js';
import { type MemoryPermit, mayKeep } from '../db/memory-permit.js';
import type { Sql } from '../db/sql.js';
import type { EventStore } from '../events/store.js';
import { CARRIERS, findCarrier } from '../rates/carriers.js';
import { chooseRate } from '../rates/pricing.js';
import { PageCache } from './page-cache.js';
import {
  type CreateShipmentInput,
  PAGE_SIZE,
  REFERENCE_MAX_LENGTH,
  type Shipment,
  type ShipmentList,
  type ShipmentStatus,
  ShipmentStatusSchema,
} from './schema.js';
import { presentShipment, type ShipmentRecord, type ShipmentStore } from './store.js';

export interface ListQuery {
  limit?: string | undefined;
  cursor?: string | undefined;
  status?: string | undefined;
  carrier?: string | undefined;
}

export interface CancelledShipment {
  id: string;
  status: 'cancelled';
  cancelled_at: string;
}

export interface ShipmentServiceDeps {
  db: Sql;
  store: ShipmentStore;
  events: EventStore;
  /** Signs the list's cursors and checks the ones clients send back. */
  cursors: CursorCodec;
  /**
   * Voids the shipment's active label, if it has one, inside the cancellation's transaction, and
   * answers the shipment as it stands afterwards (the labels module owns labels and their voids).
   */
  voidLabelOnCancel: (tx: Sql, actor: Actor, shipment: ShipmentRecord) => Promise<ShipmentRecord>;
  /**
   * Whether answers may be kept in memory: while this process writes every row, and counts each write
   * (one SQLite sandbox, or the only replica over PostgreSQL). While other replicas write too, every
   * read goes to the database.
   */
  memory: MemoryPermit;
}

/** Creating, reading, listing and cancelling shipments. */
export class ShipmentService {
  private readonly pages = new PageCache();
  /** Shipments as last read by id, kept as the pages are (a client polling a shipment reads it again). */
  private readonly reads = new PageCache(READS_KEPT);

  constructor(private readonly deps: ShipmentServiceDeps) {
    deps.memory.onWithdraw(() => {
      this.pages.forget('');
      this.reads.forget('');
    });
  }

  /**
   * Forgets the account's answers kept in memory (its reset). Its count of writes stays: it only ever
   * grows, so an answer read before the reset and offered after it can never pass for a fresh one.
   */
  forget(accountId: string): void {
    this.pages.forget(`${accountId} `);
    this.reads.forget(`${accountId} `);
  }

  /** Whether any answer of the account is kept in memory. */
  keeps(accountId: string): boolean {
    return this.pages.keeps(`${accountId} `) || this.reads.keeps(`${accountId} `);
  }

  /**
   * Validates, verifies and rates the request, then stores the shipment and its event at once. The
   * shipment is serialised once: its text is the answer and the event's `data`.
   */
  create(actor: Actor, input: CreateShipmentInput): Promise<JsonText<Shipment>> {
    checkAddress(input.from, 'from');
    checkAddress(input.to, 'to');
    verifyDestination(input.to);
    const quote = chooseRate(
      { carrier: input.carrier, service: input.service },
      input.from,
      input.to,
      input.parcel,
    );
    const { db, store, events } = this.deps;
    return db.transaction(async (tx) => {
      const { json } = await store.insert(tx, {
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
      await events.record(tx, actor.accountId, 'shipment.created', json, actor.now);
      return json;
    });
  }

  async get(q: Sql, actor: Actor, id: string): Promise<ShipmentRecord> {
    const record = await this.deps.store.find(q, actor.accountId, id);
    if (!record) throw notFound('shipment', id);
    return record;
  }

  /** The shipment, held for the rest of `tx`, which will change it. */
  async getForUpdate(tx: Sql, actor: Actor, id: string): Promise<ShipmentRecord> {
    const record = await this.deps.store.findForUpdate(tx, actor.accountId, id);
    if (!record) throw notFound('shipment', id);
    return record;
  }

  /** The shipment's JSON as stored: `GET /v1/shipments/:id` sends it as it is. */
  async getJson(actor: Actor, id: string): Promise<JsonText<Shipment>> {
    const { store, memory } = this.deps;
    const key = `${actor.accountId} ${id}`;
    const changes = store.changesOf(actor.accountId);
    const read = memory.granted ? this.reads.get(key, changes) : undefined;
    if (read !== undefined) return read as JsonText<Shipment>;
    const generation = memory.generation;
    const json = await store.findJson(actor.accountId, id);
    if (json === undefined) throw notFound('shipment', id);
    if (mayKeep(memory, generation)) this.reads.offer(key, changes, json);
    return json;
  }

  /**
   * Cancellation is allowed from `created` and `label_generated` only (the specification); a generated
   * label is voided first, so `label.voided` comes before `shipment.cancelled`.
   */
  cancel(actor: Actor, id: string): Promise<JsonText<CancelledShipment>> {
    const { db, store, events } = this.deps;
    return db.transaction(async (tx) => {
      let record = await this.getForUpdate(tx, actor, id);
      if (record.status !== 'created' && record.status !== 'label_generated') {
        throw new ApiError(
          422,
          'shipment_not_cancellable',
          `Shipment ${id} is ${record.status}; only created or label_generated shipments can be cancelled.`,
        );
      }
      if (record.labelId !== null) record = await this.deps.voidLabelOnCancel(tx, actor, record);
      const cancelled = await store.setStatus(tx, record, 'cancelled', actor.now);
      const json = toJsonText(cancelledBody(cancelled));
      await events.record(tx, actor.accountId, 'shipment.cancelled', json, actor.now);
      return json;
    });
  }

  /**
   * The dashboard's list and search: the newest shipments, or those whose id or tracking number is
   * `q` or whose reference starts with it, by status when given; newest first, one page.
   */
  async search(actor: Actor, query: SearchQuery): Promise<JsonText<{ data: Shipment[] }>> {
    const limit = parseLimit(query.limit, SEARCH_PAGE_SIZE);
    const status = parseStatus(query.status);
    const q = query.q?.trim() ?? '';
    if (q.length > REFERENCE_MAX_LENGTH) {
      throw invalidParameter('q', `'q' must be at most ${REFERENCE_MAX_LENGTH} characters.`);
    }
    const { store } = this.deps;
    const bodies =
      q === ''
        ? (await store.page(actor.accountId, { status }, limit, undefined)).bodies
        : await store.search(actor.accountId, q, status, limit);
    return `{"data":[${bodies.join(',')}]}` as JsonText<{ data: Shipment[] }>;
  }

  /**
   * One page of the account's shipments, newest first, with the contract's `meta`: the stored JSON of
   * each, joined, around the `meta` that `JSON.stringify` writes.
   */
  async list(actor: Actor, query: ListQuery): Promise<JsonText<ShipmentList>> {
    const limit = parseLimit(query.limit, PAGE_SIZE);
    const { store, cursors } = this.deps;
    const after = query.cursor === undefined ? undefined : cursors.decode(actor.accountId, query.cursor);
    const status = parseStatus(query.status);
    if (query.carrier !== undefined && !findCarrier(query.carrier)) {
      throw invalidParameter(
        'carrier',
        `'carrier' must be a carrier slug; '${query.carrier}' is not one. Valid carriers: ${CARRIERS.map((c) => c.slug).join(', ')}.`,
      );
    }
    const filter = { status, carrier: query.carrier };
    const key = [actor.accountId, limit, after?.createdAt, after?.seq, status, query.carrier].join(' ');
    const changes = store.changesOf(actor.accountId);
    const { memory } = this.deps;
    const answered = memory.granted ? this.pages.get(key, changes) : undefined;
    if (answered !== undefined) return answered as JsonText<ShipmentList>;
    const generation = memory.generation;
    const [{ bodies, hasMore, last }, total] = await Promise.all([
      store.page(actor.accountId, filter, limit, after),
      store.count(actor.accountId, filter),
    ]);
    const meta: ShipmentList['meta'] = pageMeta(cursors, actor.accountId, { hasMore, last }, total);
    const text = `{"data":[${bodies.join(',')}],"meta":${JSON.stringify(meta)}}` as JsonText<ShipmentList>;
    if (mayKeep(memory, generation)) this.pages.offer(key, changes, text);
    return text;
  }
}

/** What the sandbox's shipment search takes (`GET /_sandbox/shipments`). */
export interface SearchQuery {
  q?: string | undefined;
  status?: string | undefined;
  limit?: string | undefined;
}

/** 1 Mi characters of shipments read by id: about 1,800 of them. */
const READS_KEPT = 1024 * 1024;

export const SEARCH_PAGE_SIZE = { default: 50, max: 100 } as const;

/** A `status` filter: a shipment status, or 400 `invalid_parameter`. */
function parseStatus(raw: string | undefined): ShipmentStatus | undefined {
  if (raw === undefined) return undefined;
  const status = ShipmentStatusSchema.safeParse(raw);
  if (!status.success) {
    throw invalidParameter(
      'status',
      `'status' must be one of ${ShipmentStatusSchema.options.join(', ')}; got '${raw}'.`,
    );
  }
  return status.data;
}

export function cancelledBody(record: ShipmentRecord): CancelledShipment {
  return { id: record.id, status: 'cancelled', cancelled_at: presentShipment(record).cancelled_at as string };
}
