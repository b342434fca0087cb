import type { Actor } from '../core/actor.js';
import { ApiError, notFound } from '../core/errors.js';
import { newId } from '../core/ids.js';
import { DAY, formatTimestamp } from '../core/time.js';
import { transaction } from '../db/database.js';
import { getShipment } from '../shipments/service.js';
import type { ShipmentRecord } from '../shipments/store.js';
import type { State } from '../state.js';
import { defaultScenarioOf, startScenario, TRACKING_STEP } from '../tracking/service.js';
import type { CreateLabelInput, Label, VoidedLabel } from './schema.js';
import type { LabelRecord } from './store.js';
import { trackingNumberFor } from './tracking-number.js';

/** The specification's windows, all on the account's clock. */
export const LABEL_URL_VALIDITY_MS = 7 * DAY;
export const VOID_WINDOW_MS = 30 * DAY;
export const REFUND_DELAY_MS = 14 * DAY;

export const FILE_EXTENSIONS = { pdf: 'pdf', png: 'png', zpl: 'zpl' } as const;

/** The file name a label is served under, in downloads and in pre-signed URLs. */
export const labelFileName = (label: Pick<LabelRecord, 'id' | 'format'>) =>
  `${label.id}.${FILE_EXTENSIONS[label.format]}`;

export function presentLabel(state: State, label: LabelRecord, cdnBase: string): Label {
  const expiresUnix = Math.floor(label.expiresAt / 1000);
  return {
    id: label.id,
    shipment_id: label.shipmentId,
    tracking_number: label.trackingNumber,
    carrier: label.carrier,
    format: label.format,
    label_url: state.urlSigner.url(cdnBase, labelFileName(label), expiresUnix),
    expires_at: formatTimestamp(label.expiresAt),
    created_at: formatTimestamp(label.createdAt),
    status: label.status,
  };
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

/** A tracking number no other label has: the label's own, or the next attempt on a clash. */
function uniqueTrackingNumber(state: State, carrier: string, labelId: string): string {
  for (let attempt = 0; ; attempt++) {
    const candidate = trackingNumberFor(carrier, labelId, attempt);
    if (!state.labels.isTrackingNumberTaken(candidate)) return candidate;
  }
}

/**
 * Stores the label, moves the shipment to `label_generated`, records `label.generated` and starts
 * its tracking scenario, in one transaction. The file is not rendered here: rendering is a pure
 * function of the label, so it happens on the first download (and is cached), which keeps label
 * creation to a few milliseconds under load.
 */
export function generateLabel(
  state: State,
  actor: Actor,
  input: CreateLabelInput,
  cdnBase: string,
): LabelRecord {
  return transaction(state.db, () => {
    const shipment = getShipment(state, actor, input.shipment_id);
    assertLabelable(shipment);
    const id = newId('lbl', actor.now);
    const label = state.labels.insert({
      id,
      accountId: actor.accountId,
      shipmentId: shipment.id,
      trackingNumber: uniqueTrackingNumber(state, shipment.carrier, id),
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
    const linked = state.shipments.setLabel(shipment, 'label_generated', {
      labelId: id,
      trackingNumber: label.trackingNumber,
    });
    state.events.record(actor.accountId, 'label.generated', presentLabel(state, label, cdnBase), actor.now);
    startScenario(state, actor, label, linked, defaultScenarioOf(state, actor.accountId));
    return label;
  });
}

export function getLabel(state: State, actor: Actor, id: string): LabelRecord {
  const label = state.labels.find(actor.accountId, id);
  if (!label) throw notFound('label', id);
  return label;
}

/**
 * Voids a label: at most 30 days old and not yet scanned by the carrier. Refunds the shipment's rate,
 * expected 14 days later, moves a `label_generated` shipment back to `created`, records `label.voided`.
 */
export function voidLabel(state: State, actor: Actor, id: string): VoidedLabel {
  return transaction(state.db, () => {
    const label = getLabel(state, actor, id);
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
    const { shipment: _, ...body } = voidWithinTransaction(
      state,
      actor,
      label,
      getShipment(state, actor, label.shipmentId),
      'refund',
    );
    return body;
  });
}

/**
 * The void itself, inside the caller's transaction. Cancelling a shipment voids its label whatever
 * the window says (the specification allows cancelling a `label_generated` shipment always); outside
 * the window such a void refunds nothing.
 */
export function voidWithinTransaction(
  state: State,
  actor: Actor,
  label: LabelRecord,
  shipment: ShipmentRecord,
  refund: 'refund' | 'refund_if_eligible',
): VoidedLabel & { shipment: ShipmentRecord } {
  const voided = state.labels.markVoided(label, actor.now);
  state.scheduler.cancel(TRACKING_STEP, label.id, actor.now);
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
      ? state.shipments.setLabel(
          shipment,
          shipment.status === 'label_generated' ? 'created' : shipment.status,
          {
            labelId: null,
            trackingNumber: null,
          },
        )
      : shipment;
  state.events.record(actor.accountId, 'label.voided', { ...body, shipment_id: shipment.id }, actor.now);
  return { ...body, shipment: updated };
}
