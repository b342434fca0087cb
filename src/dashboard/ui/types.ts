/** The parts of the API's answers that the dashboard reads (see /openapi.json for the whole). */

export interface Money {
  amount: string;
  currency: string;
}

export interface Address {
  name?: string;
  company?: string;
  address1?: string;
  city?: string;
  state?: string;
  zip?: string;
  country?: string;
}

export const SHIPMENT_STATUSES = [
  'created',
  'label_generated',
  'in_transit',
  'delivered',
  'cancelled',
] as const;

export interface Shipment {
  id: string;
  status: (typeof SHIPMENT_STATUSES)[number];
  carrier: string;
  service: string;
  rate: Money;
  from: Address;
  to: Address;
  parcel: { weight: number; length: number; width: number; height: number };
  reference: string | null;
  tracking_number: string | null;
  label_id: string | null;
  created_at: string;
  cancelled_at: string | null;
}

export interface Label {
  id: string;
  shipment_id: string;
  tracking_number: string;
  carrier: string;
  format: 'pdf' | 'png' | 'zpl';
  label_url: string;
  expires_at: string;
  created_at: string;
  status: 'active' | 'voided';
}

export interface TrackingEvent {
  status: string;
  description: string;
  location: string;
  occurred_at: string;
}

export interface ParcelOverview {
  shipment_id: string;
  label_id: string;
  tracking_number: string;
  scenario: string | null;
  tracking: { status: string; estimated_delivery: string; events: TrackingEvent[] };
  upcoming: { status: string; description: string; location: string; due_at: string }[];
  can_advance_to: string[];
}

export interface Rate {
  carrier: string;
  service: string;
  rate: Money;
  estimated_days: number;
}

export interface Scenario {
  name: string;
  description: string;
}

export const EVENT_TYPES = [
  'shipment.created',
  'shipment.cancelled',
  'label.generated',
  'label.voided',
  'tracking.updated',
  'tracking.delivered',
  'tracking.exception',
] as const;

export interface Webhook {
  id: string;
  url: string;
  events: string[];
  status: 'active' | 'failed' | 'disabled';
  created_at: string;
}

export interface Attempt {
  id: string;
  webhook_id: string;
  event_id: string;
  event: string;
  attempt: number;
  redelivery: boolean;
  probe: boolean;
  probe_signature: 'genuine' | 'forged' | null;
  status: 'scheduled' | 'sending' | 'succeeded' | 'failed' | 'cancelled';
  scheduled_at: string;
  sent_at: string | null;
  response_status: number | null;
  response_excerpt: string | null;
  duration_ms: number | null;
  error: string | null;
  error_message: string | null;
  next_attempt_at: string | null;
}

export interface AttemptInFull extends Attempt {
  request: { method: string; url: string; headers: Record<string, string>; body: string } | null;
}

export interface DueItem {
  id: string;
  kind: string;
  subject: string;
  due_at: string;
  detail: Record<string, unknown>;
}

export interface Account {
  id: string;
  name: string;
  plan: string;
}

export const SCOPES = [
  'shipments:read',
  'shipments:write',
  'rates:read',
  'orders:read',
  'billing:read',
] as const;

export interface Key {
  id: string;
  name: string;
  scopes: string[];
  last4: string;
  created_at: string;
  last_used_at: string | null;
  revoked_at: string | null;
}

export interface Email {
  id: string;
  to: string;
  subject: string;
  body: string;
  created_at: string;
}

export interface Fault {
  id: string;
  method: string | null;
  path: string;
  status: number | null;
  code: string | null;
  delay_ms: number;
  drop: boolean;
  times: number | null;
  remaining: number | null;
  created_at: string;
}

export interface JournalEntry {
  id: string;
  method: string;
  path: string;
  query: string;
  status: number;
  code: string | null;
  duration_ms: number;
  at: string;
  wall_at: string;
  key_id: string;
  retry_after: number | null;
}

/** `POST /_sandbox/webhooks/:id/probe`. */
export interface ProbeResult {
  genuine: ProbeAttempt;
  forged: ProbeAttempt;
  verifies_signatures: boolean;
}

export interface ProbeAttempt {
  delivery_id: string;
  response_status: number | null;
  error: string | null;
  duration_ms: number | null;
}

export type CheckStatus = 'pass' | 'fail' | 'not_observed';

/** `GET /_sandbox/report` (docs/report.md). */
export interface Report {
  account_id: string;
  generated_at: string;
  generated_wall_at: string;
  status: CheckStatus;
  checks: Check[];
}

export interface Check {
  id: string;
  title: string;
  status: CheckStatus;
  summary: string;
  counts: { passed: number; failed: number };
  evidence: Evidence[];
}

/** One occurrence a check judged: what `id` names depends on `kind`. */
export interface Evidence {
  kind: 'request' | 'delivery' | 'label_url';
  id: string;
  at: string | null;
  wall_at: string | null;
  detail: string;
  webhook_id?: string;
  shipment_id?: string;
}

export interface List<T> {
  data: T[];
}
