import type { Actor } from '../core/actor.js';
import { ApiError, notFound } from '../core/errors.js';
import { newId } from '../core/ids.js';
import { type JsonText, toJsonText } from '../core/json.js';
import { DAY, formatTimestamp } from '../core/time.js';
import type { Sql } from '../db/sql.js';
import type { EventStore } from '../events/store.js';
import type { ShipmentService } from '../shipments/service.js';
import type { ShipmentRecord, ShipmentStore } from '../shipments/store.js';
import type { LabelFiles } from './files.js';
import type { RenderedLabel } from './render/index.js';
import type { CreateLabelInput, Label, VoidedLabel } from './schema.js';
import type { UrlSigner } from './signed-url.js';
import type { LabelRecord, LabelStore } from './store.js';
import { trackingNumberFor } from './tracking-number.js';

/** The specification's windows, all on the account's clock. */
export const LABEL_URL_VALIDITY_MS = 7 * DAY;
export const VOID_WINDOW_MS = 30 * DAY;
export const REFUND_DELAY_MS = 14 * DAY;

export const FILE_EXTENSIONS = { pdf: 'pdf', png: 'png', zpl: 'zpl' } as const;

/** The file name a label is served under, in downloads and in pre-signed URLs. */
export const labelFileName = (label: Pick<LabelRecord, 'id' | 'format'>) =>
  `${label.id}.${FILE_EXTENSIONS[label.format]}`;

/** What a label's parcel does on the carrier's side (the tracking module plays it). */
export interface LabelTracking {
  /** Starts the account's default scenario for a new label, inside its transaction. */
  start(tx: Sql, actor: Actor, label: LabelRecord, shipment: ShipmentRecord): Promise<void>;
  /** Stops whatever the label's parcel still had to do (a void), inside its transaction. */
  stop(tx: Sql, actor: Actor, labelId: string): Promise<void>;
}

export interface LabelServiceDeps {
  db: Sql;
  store: LabelStore;
  shipments: ShipmentService;
  shipmentStore: ShipmentStore;
  events: EventStore;
  signer: UrlSigner;
  files: LabelFiles;
  tracking: LabelTracking;
  /** The instant an account's clock reads now (pre-signed URLs expire on the owner's clock). */
  nowOf: (accountId: string) => Promise<number | undefined>;
  /**
   * Hears of every download through a genuine pre-signed URL, in time or expired, for the owner's
   * integration report (`refreshes_label_urls`). An altered URL is nobody's, and is not reported.
   */
  noteUrlFetch?: (fetch: LabelUrlFetch) => void;
}

/** A download through a pre-signed URL whose signature held. */
export interface LabelUrlFetch {
  accountId: string;
  labelId: string;
  shipmentId: string;
  /** On the owner's clock. */
  at: number;
  /** When the URL expired (or expires), on the owner's clock. */
  expiresAt: number;
  expired: boolean;
}

/** Buying, reading, downloading and voiding labels. */
export class LabelService {
  constructor(private readonly deps: LabelServiceDeps) {}

  present(label: LabelRecord, cdnBase: string): Label {
    const expiresUnix = Math.floor(label.expiresAt / 1000);
    return {
      id: label.id,
      shipment_id: label.shipmentId,
      tracking_number: label.trackingNumber,
      carrier: label.carrier,
      format: label.format,
      label_url: this.deps.signer.url(cdnBase, labelFileName(label), expiresUnix),
      expires_at: formatTimestamp(label.expiresAt),
      created_at: formatTimestamp(label.createdAt),
      status: label.status,
    };
  }

  /**
   * Stores the label, moves the shipment to `label_generated`, records `label.generated` and starts
   * its tracking scenario, in one transaction. The file is not rendered here, which keeps label
   * creation to a few milliseconds under load: rendering is a pure function of the label, so once
   * the transaction has committed the file is queued to render in the background, ahead of its first
   * download (see files.ts). The label is serialised once, for the answer and the event.
   */
  async generate(actor: Actor, input: CreateLabelInput, cdnBase: string): Promise<JsonText<Label>> {
    const { db, store, shipments, shipmentStore, events, tracking } = this.deps;
    let bought: { label: LabelRecord; shipment: ShipmentRecord } | undefined;
    const answer = await db.transaction(async (tx) => {
      const shipment = await shipments.getForUpdate(tx, actor, input.shipment_id);
      assertLabelable(shipment);
      const id = newId('lbl', actor.now);
      const label = await store.insert(tx, {
        id,
        accountId: actor.accountId,
        shipmentId: shipment.id,
        trackingNumber: await this.uniqueTrackingNumber(tx, shipment.carrier, id),
        carrier: shipment.carrier,
        format: input.format,
        size: input.size,
        status: 'active',
        createdAt: actor.now,
        expiresAt: actor.now + LABEL_URL_VALIDITY_MS,
        voidedAt: null,
        scannedAt: null,
        scenario: null,
        trackingStatus: null,
        estimatedDelivery: null,
      });
      const linked = await shipmentStore.setLabel(tx, shipment, 'label_generated', {
        labelId: id,
        trackingNumber: label.trackingNumber,
      });
      bought = { label, shipment: linked };
      const json = toJsonText(this.present(label, cdnBase));
      await events.record(tx, actor.accountId, 'label.generated', json, actor.now);
      await tracking.start(tx, actor, label, linked);
      return json;
    });
    if (bought) this.deps.files.renderAhead(bought.label, bought.shipment);
    return answer;
  }

  /** A tracking number no other label has: the label's own, or the next attempt on a clash. */
  private async uniqueTrackingNumber(tx: Sql, carrier: string, labelId: string): Promise<string> {
    for (let attempt = 0; ; attempt++) {
      const candidate = trackingNumberFor(carrier, labelId, attempt);
      if (!(await this.deps.store.isTrackingNumberTaken(tx, candidate))) return candidate;
    }
  }

  async get(actor: Actor, id: string): Promise<LabelRecord> {
    const label = await this.deps.store.find(this.deps.db, actor.accountId, id);
    if (!label) throw notFound('label', id);
    return label;
  }

  /** The label's file, rendered on first use (see files.ts). */
  async file(actor: Actor, label: LabelRecord): Promise<RenderedLabel> {
    return this.deps.files.get(label, await this.deps.shipments.get(this.deps.db, actor, label.shipmentId));
  }

  /** The label as a PNG, whatever its format (the dashboard's preview). */
  async preview(actor: Actor, label: LabelRecord): Promise<RenderedLabel> {
    return this.deps.files.preview(
      label,
      await this.deps.shipments.get(this.deps.db, actor, label.shipmentId),
    );
  }

  /**
   * A download through a pre-signed URL, which carries its own authority instead of an account's
   * key. The signature is checked before anything is looked up, so an altered URL learns nothing;
   * expiry is judged on the clock of the account that owns the label.
   */
  async fileBySignedUrl(
    file: string,
    expires: string | undefined,
    signature: string | undefined,
  ): Promise<{ label: LabelRecord; file: RenderedLabel }> {
    const { signer, store, nowOf } = this.deps;
    if (!signer.verify(file, expires, signature)) {
      throw new ApiError(
        403,
        'invalid_signature',
        'The URL signature does not match; use label_url unchanged.',
      );
    }
    const label = await store.findAnywhere(this.deps.db, file.replace(/\.[a-z]+$/, ''));
    const now = label && (await nowOf(label.accountId));
    if (!label || now === undefined) throw new ApiError(404, 'not_found', 'The label no longer exists.');
    const expiresAt = Number(expires) * 1000;
    const expired = now >= expiresAt;
    this.deps.noteUrlFetch?.({
      accountId: label.accountId,
      labelId: label.id,
      shipmentId: label.shipmentId,
      at: now,
      expiresAt,
      expired,
    });
    if (expired) {
      throw new ApiError(
        403,
        'url_expired',
        'This label URL has expired; download the label with GET /v1/labels/{id}/download and your API key.',
      );
    }
    const owner = { accountId: label.accountId, now };
    return { label, file: await this.file(owner, label) };
  }

  /**
   * Voids a label: at most 30 days old and not yet scanned by the carrier. Refunds the shipment's
   * rate, expected 14 days later, moves a `label_generated` shipment back to `created`, records
   * `label.voided`.
   */
  void(actor: Actor, id: string): Promise<JsonText<VoidedLabel>> {
    return this.deps.db.transaction(async (tx) => {
      const label = await this.deps.store.findForUpdate(tx, actor.accountId, id);
      if (!label) throw notFound('label', id);
      if (label.status === 'voided') {
        throw new ApiError(
          422,
          'label_already_voided',
          `Label ${id} was already voided at ${formatTimestamp(label.voidedAt ?? 0)}.`,
        );
      }
      if (label.scannedAt !== null) {
        throw new ApiError(
          422,
          'label_already_scanned',
          `Label ${id} was scanned by the carrier at ${formatTimestamp(label.scannedAt)}; scanned labels cannot be voided.`,
        );
      }
      if (actor.now - label.createdAt > VOID_WINDOW_MS) {
        throw new ApiError(
          422,
          'void_window_expired',
          `Label ${id} was generated at ${formatTimestamp(label.createdAt)}; labels can be voided for 30 days only.`,
        );
      }
      const shipment = await this.deps.shipments.getForUpdate(tx, actor, label.shipmentId);
      return toJsonText((await this.voidWithinTransaction(tx, actor, label, shipment, 'refund')).body);
    });
  }

  /**
   * Cancelling a shipment voids its active label whatever the window says (the specification allows
   * cancelling a `label_generated` shipment always); outside the window such a void refunds nothing.
   * Runs inside the cancellation's transaction; answers the shipment as it stands afterwards.
   */
  async voidOnCancel(tx: Sql, actor: Actor, shipment: ShipmentRecord): Promise<ShipmentRecord> {
    const label =
      shipment.labelId === null
        ? undefined
        : await this.deps.store.findForUpdate(tx, actor.accountId, shipment.labelId);
    if (label?.status !== 'active') return shipment;
    return (await this.voidWithinTransaction(tx, actor, label, shipment, 'refund_if_eligible')).shipment;
  }

  private async voidWithinTransaction(
    tx: Sql,
    actor: Actor,
    label: LabelRecord,
    shipment: ShipmentRecord,
    refund: 'refund' | 'refund_if_eligible',
  ): Promise<{ body: VoidedLabel; shipment: ShipmentRecord }> {
    const { store, shipmentStore, events, tracking } = this.deps;
    const voided = await store.markVoided(tx, label, actor.now);
    await tracking.stop(tx, actor, label.id);
    const eligible =
      refund === 'refund' || (label.scannedAt === null && actor.now - label.createdAt <= VOID_WINDOW_MS);
    const body: VoidedLabel = {
      id: voided.id,
      status: 'voided',
      refund: {
        amount: eligible ? shipment.rate.amount : '0.00',
        currency: shipment.rate.currency,
        estimated_at: formatTimestamp(actor.now + REFUND_DELAY_MS),
      },
    };
    const updated =
      shipment.labelId === label.id
        ? await shipmentStore.setLabel(
            tx,
            shipment,
            shipment.status === 'label_generated' ? 'created' : shipment.status,
            {
              labelId: null,
              trackingNumber: null,
            },
          )
        : shipment;
    await events.record(
      tx,
      actor.accountId,
      'label.voided',
      toJsonText({ ...body, shipment_id: shipment.id }),
      actor.now,
    );
    return { body, shipment: updated };
  }
}

function assertLabelable(shipment: ShipmentRecord): void {
  if (shipment.status === 'cancelled') {
    throw new ApiError(
      422,
      'shipment_cancelled',
      `Shipment ${shipment.id} is cancelled; it cannot get a label.`,
      {
        field: 'shipment_id',
      },
    );
  }
  if (shipment.labelId !== null || shipment.status !== 'created') {
    throw new ApiError(
      422,
      'label_already_exists',
      `Shipment ${shipment.id} already has an active label (${shipment.labelId ?? 'in use'}); void it first.`,
      { field: 'shipment_id' },
    );
  }
}
