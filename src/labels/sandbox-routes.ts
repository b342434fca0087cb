import { createRoute, z } from '@hono/zod-openapi';
import { requireScope } from '../http/auth.js';
import { BEARER_SECURITY, controlErrors, createRouter, ErrorCodes, idParam } from '../http/router.js';
import type { LabelService } from './service.js';

/** What QA looks at: any label drawn as a PNG, which a browser shows inline (PDF and ZPL it cannot). */
export function labelControlRoutes(labels: LabelService) {
  const router = createRouter();

  router.openapi(
    createRoute({
      method: 'get',
      path: '/labels/{id}/preview',
      operationId: 'previewLabel',
      tags: ['Sandbox controls'],
      summary: 'A label drawn as a PNG, whatever its format',
      description:
        "The same drawing as the label's own file, as a PNG image: the dashboard shows it inline. Voided labels too.",
      security: BEARER_SECURITY,
      middleware: [requireScope('shipments:read')] as const,
      request: { params: idParam('lbl_01JD…') },
      responses: {
        200: {
          description: 'The label as a PNG',
          content: { 'image/png': { schema: z.string().openapi({ format: 'binary' }) } },
        },
        ...controlErrors(...ErrorCodes.lookup),
      },
    }),
    async (c) => {
      const caller = c.get('caller');
      const preview = await labels.preview(caller, labels.get(caller, c.req.valid('param').id));
      return c.body(preview.bytes as Uint8Array<ArrayBuffer>, 200, {
        'content-type': preview.contentType,
        'cache-control': 'private, max-age=300',
      });
    },
  );

  return router;
}
