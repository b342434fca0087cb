import { createRoute, z } from '@hono/zod-openapi';
import { requireScope } from '../http/auth.js';
import { BEARER_SECURITY, controlErrors, createRouter, jsonResponse } from '../http/router.js';
import type { ScenarioCatalog } from './catalog.js';
import { TRACKING_STATUSES } from './vocabulary.js';

const ScenarioListSchema = z
  .object({
    data: z.array(
      z.object({
        name: z.string(),
        description: z.string(),
        steps: z.array(
          z.object({
            after: z.number().openapi({ description: 'seconds after the previous step' }),
            status: z.enum(TRACKING_STATUSES),
            description: z.string().optional(),
            at: z.string().optional(),
          }),
        ),
      }),
    ),
  })
  .openapi('ScenarioList');

export function scenarioRoutes(scenarios: ScenarioCatalog) {
  const router = createRouter();
  router.openapi(
    createRoute({
      method: 'get',
      path: '/scenarios',
      operationId: 'listScenarios',
      tags: ['Sandbox controls'],
      summary: 'The scenarios a label can play',
      security: BEARER_SECURITY,
      middleware: [requireScope('shipments:read')] as const,
      responses: { 200: jsonResponse(ScenarioListSchema, 'Scenarios'), ...controlErrors() },
    }),
    (c) =>
      c.json(
        {
          data: scenarios.all().map((scenario) => ({
            name: scenario.name,
            description: scenario.description,
            steps: scenario.steps.map((step) => ({
              after: step.afterMs / 1000,
              status: step.status,
              ...(step.description === undefined ? {} : { description: step.description }),
              ...(step.at === undefined ? {} : { at: step.at }),
            })),
          })),
        },
        200,
      ),
  );
  return router;
}
