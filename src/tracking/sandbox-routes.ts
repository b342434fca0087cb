import { createRoute, z } from '@hono/zod-openapi';
import type { Actor } from '../core/actor.js';
import { TimestampSchema } from '../core/schemas.js';
import { requireScope } from '../http/auth.js';
import {
  BEARER_SECURITY,
  controlErrors,
  createRouter,
  ErrorCodes,
  idParam,
  jsonBody,
  jsonResponse,
} from '../http/router.js';
import { TrackingNumberParam, TrackingSchema, TrackingStatusSchema } from './schema.js';
import type { TrackingService } from './service.js';

const security = BEARER_SECURITY;
const tags = ['Sandbox controls'];
/** Every lever looks its parcel up and changes its tracking, which a voided label or cancelled shipment refuses. */
const LEVER_ERRORS = [
  ...ErrorCodes.body,
  ...ErrorCodes.validation,
  ...ErrorCodes.lookup,
  'no_active_label',
  ...ErrorCodes.write,
] as const;

const ShipmentIdParam = idParam('shp_01JD…');

const ScenarioRequestSchema = z
  .object({ name: z.string().min(1, 'must not be empty').openapi({ example: 'exception_then_delivered' }) })
  .strict()
  .openapi('ScenarioRequest');

const ScenarioStartedSchema = z
  .object({
    shipment_id: z.string(),
    tracking_number: z.string(),
    scenario: z.string(),
    steps: z.array(
      z.object({
        status: TrackingStatusSchema,
        description: z.string(),
        location: z.string(),
        occurred_at: TimestampSchema,
      }),
    ),
  })
  .openapi('ScenarioStarted');

const AdvanceRequestSchema = z
  .object({ status: TrackingStatusSchema.openapi({ example: 'delivered' }) })
  .strict()
  .openapi('TrackingAdvanceRequest');

const CustomEventSchema = z
  .object({
    status: TrackingStatusSchema,
    description: z
      .string()
      .trim()
      .min(1, 'must not be empty')
      .max(200, 'must be at most 200 characters')
      .optional(),
    location: z
      .string()
      .trim()
      .min(1, 'must not be empty')
      .max(100, 'must be at most 100 characters')
      .optional(),
  })
  .strict()
  .openapi('CustomTrackingEvent');

const ParcelOverviewSchema = z
  .object({
    shipment_id: z.string(),
    label_id: z.string(),
    tracking_number: z.string(),
    scenario: z.string().nullable().openapi({ description: 'the scenario the label plays' }),
    tracking: TrackingSchema,
    upcoming: z
      .array(
        z.object({
          status: TrackingStatusSchema,
          description: z.string(),
          location: z.string(),
          due_at: TimestampSchema,
        }),
      )
      .openapi({ description: "the scenario's steps still to come, soonest first, on the account's clock" }),
    can_advance_to: z.array(TrackingStatusSchema).openapi({
      description: 'the statuses POST /_sandbox/shipments/{id}/advance accepts now',
    }),
  })
  .openapi('ParcelOverview');

/**
 * QA's levers on tracking: start another scenario, jump to a status, or add an event. Each works by
 * shipment id and by tracking number.
 */
export function trackingControlRoutes(tracking: TrackingService) {
  const router = createRouter();

  const byShipment = (actor: Actor, id: string) => tracking.activeLabelOf(actor, id);
  const byNumber = (actor: Actor, n: string) => tracking.labelByTrackingNumber(actor, n);

  for (const [prefix, params, find, name] of [
    [
      '/shipments/{id}',
      ShipmentIdParam,
      (actor: Actor, p: Record<string, string>) => byShipment(actor, p.id ?? ''),
      'Shipment',
    ],
    [
      '/tracking/{tracking_number}',
      TrackingNumberParam,
      (actor: Actor, p: Record<string, string>) => byNumber(actor, p.tracking_number ?? ''),
      'TrackingNumber',
    ],
  ] as const) {
    const subject = prefix.startsWith('/shipments') ? 'a shipment' : 'a tracking number';

    router.openapi(
      createRoute({
        method: 'post',
        path: `${prefix}/scenario`,
        operationId: `switchScenarioBy${name}`,
        tags,
        summary: `Play another scenario for ${subject}, from now`,
        security,
        middleware: [requireScope('shipments:write')] as const,
        request: { params, body: jsonBody(ScenarioRequestSchema) },
        responses: {
          200: jsonResponse(ScenarioStartedSchema, 'The planned steps'),
          ...controlErrors(...LEVER_ERRORS, 'invalid_transition'),
        },
      }),
      async (c) => {
        const actor = c.get('caller');
        const label = await find(actor, c.req.valid('param') as Record<string, string>);
        return c.json(await tracking.switchScenario(actor, label, c.req.valid('json').name), 200);
      },
    );

    router.openapi(
      createRoute({
        method: 'post',
        path: `${prefix}/advance`,
        operationId: `advanceTrackingBy${name}`,
        tags,
        summary: `Advance ${subject} to a tracking status, playing every step on the way`,
        security,
        middleware: [requireScope('shipments:write')] as const,
        request: { params, body: jsonBody(AdvanceRequestSchema) },
        responses: {
          200: jsonResponse(TrackingSchema, 'The tracking record'),
          ...controlErrors(...LEVER_ERRORS, 'invalid_transition'),
        },
      }),
      async (c) => {
        const actor = c.get('caller');
        const label = await find(actor, c.req.valid('param') as Record<string, string>);
        return c.json(await tracking.advance(actor, label, c.req.valid('json').status), 200);
      },
    );

    router.openapi(
      createRoute({
        method: 'post',
        path: `${prefix}/events`,
        operationId: `addTrackingEventBy${name}`,
        tags,
        summary: `Append a custom tracking event to ${subject}`,
        security,
        middleware: [requireScope('shipments:write')] as const,
        request: { params, body: jsonBody(CustomEventSchema) },
        responses: {
          201: jsonResponse(TrackingSchema, 'The tracking record'),
          ...controlErrors(...LEVER_ERRORS),
        },
      }),
      async (c) => {
        const actor = c.get('caller');
        const label = await find(actor, c.req.valid('param') as Record<string, string>);
        return c.json(await tracking.appendCustomEvent(actor, label, c.req.valid('json')), 201);
      },
    );
  }

  router.openapi(
    createRoute({
      method: 'get',
      path: '/shipments/{id}/tracking',
      operationId: 'getParcel',
      tags,
      summary:
        "A shipment's parcel: its tracking, its scenario's next steps, the statuses it can be forced to",
      security,
      middleware: [requireScope('shipments:read')] as const,
      request: { params: ShipmentIdParam },
      responses: {
        200: jsonResponse(ParcelOverviewSchema, 'The parcel'),
        // A shipment without a label (or whose label was voided) has no parcel yet.
        ...controlErrors(...ErrorCodes.lookup, 'no_active_label'),
      },
    }),
    async (c) => c.json(await tracking.overview(c.get('caller'), c.req.valid('param').id), 200),
  );

  return router;
}
