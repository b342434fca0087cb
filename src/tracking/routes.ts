import { createRoute } from '@hono/zod-openapi';
import { requireScope } from '../http/auth.js';
import { apiErrors, apiResponse, BEARER_SECURITY, createRouter, ErrorCodes } from '../http/router.js';
import { TrackingNumberParam, TrackingSchema } from './schema.js';
import type { TrackingService } from './service.js';

export function trackingRoutes(tracking: TrackingService) {
  const router = createRouter();
  router.openapi(
    createRoute({
      method: 'get',
      path: '/tracking/{tracking_number}',
      operationId: 'getTracking',
      tags: ['Tracking'],
      summary: 'Track a parcel by its tracking number, whatever the carrier',
      security: BEARER_SECURITY,
      middleware: [requireScope('shipments:read')] as const,
      request: { params: TrackingNumberParam },
      responses: {
        200: apiResponse(TrackingSchema, 'The tracking record'),
        ...apiErrors(...ErrorCodes.lookup),
      },
    }),
    async (c) => c.json(await tracking.get(c.get('caller'), c.req.valid('param').tracking_number), 200),
  );
  return router;
}
