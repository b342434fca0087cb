import { createRoute, z } from '@hono/zod-openapi';
import { requireScope } from '../http/auth.js';
import {
  BEARER_SECURITY,
  controlErrors,
  createRouter,
  ErrorCodes,
  fileResponse,
  jsonBody,
  jsonResponse,
  sendJsonText,
} from '../http/router.js';
import { twinDescription } from '../http/twin.js';
import {
  type CdnBase,
  FILE_DESCRIPTION,
  GENERATE_ERRORS,
  IdParam,
  LABEL_MEDIA_TYPES,
  sendLabelFile,
  VOID_ERRORS,
} from './routes.js';
import { CreateLabelSchema, LabelSchema, VoidedLabelSchema } from './schema.js';
import type { LabelService } from './service.js';

/**
 * What QA looks at (any label drawn as a PNG, which a browser shows inline; PDF and ZPL it cannot),
 * and the dashboard's twins of the label routes (see http/twin.ts): its reads, downloads and voids
 * are not the merchant client's, and neither is a label URL it would otherwise fetch.
 */
export function labelControlRoutes(labels: LabelService, cdnBase: CdnBase) {
  const router = createRouter();
  const tags = ['Sandbox controls'];
  const security = BEARER_SECURITY;
  const read = requireScope('shipments:read');
  const write = requireScope('shipments:write');

  router.openapi(
    createRoute({
      method: 'get',
      path: '/labels/{id}/preview',
      operationId: 'previewLabel',
      tags,
      summary: 'A label drawn as a PNG, whatever its format',
      description:
        "The same drawing as the label's own file, as a PNG image: the dashboard shows it inline. Voided labels too.",
      security,
      middleware: [read] as const,
      request: { params: IdParam },
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
      const preview = await labels.preview(caller, await labels.get(caller, c.req.valid('param').id));
      return c.body(preview.bytes as Uint8Array<ArrayBuffer>, 200, {
        'content-type': preview.contentType,
        'cache-control': 'private, max-age=300',
      });
    },
  );

  router.openapi(
    createRoute({
      method: 'post',
      path: '/labels',
      operationId: 'sandboxCreateLabel',
      tags,
      summary: 'Generate a label for a shipment, for the dashboard',
      description: twinDescription('POST /v1/labels'),
      security,
      middleware: [write] as const,
      request: { body: jsonBody(CreateLabelSchema) },
      responses: {
        201: jsonResponse(LabelSchema, 'The label, with a pre-signed URL valid 7 days'),
        ...controlErrors(...GENERATE_ERRORS),
      },
    }),
    async (c) =>
      sendJsonText(c, await labels.generate(c.get('caller'), c.req.valid('json'), cdnBase(c)), 201),
  );

  router.openapi(
    createRoute({
      method: 'get',
      path: '/labels/{id}',
      operationId: 'sandboxGetLabel',
      tags,
      summary: 'Get a label, for the dashboard',
      description: twinDescription('GET /v1/labels/{id}'),
      security,
      middleware: [read] as const,
      request: { params: IdParam },
      responses: {
        200: jsonResponse(LabelSchema, 'The label'),
        ...controlErrors(...ErrorCodes.lookup),
      },
    }),
    async (c) =>
      c.json(labels.present(await labels.get(c.get('caller'), c.req.valid('param').id), cdnBase(c)), 200),
  );

  router.openapi(
    createRoute({
      method: 'get',
      path: '/labels/{id}/download',
      operationId: 'sandboxDownloadLabel',
      tags,
      summary: 'Download the label file, for the dashboard',
      description: `${twinDescription('GET /v1/labels/{id}/download')} Nor is it a fetch of the label's URL.`,
      security,
      middleware: [read] as const,
      request: { params: IdParam },
      responses: {
        200: fileResponse(FILE_DESCRIPTION, LABEL_MEDIA_TYPES, false),
        ...controlErrors(...ErrorCodes.lookup),
      },
    }),
    (c) => sendLabelFile(c, labels, c.req.valid('param').id),
  );

  router.openapi(
    createRoute({
      method: 'delete',
      path: '/labels/{id}',
      operationId: 'sandboxVoidLabel',
      tags,
      summary: 'Void a label and refund it, for the dashboard',
      description: twinDescription('DELETE /v1/labels/{id}'),
      security,
      middleware: [write] as const,
      request: { params: IdParam },
      responses: {
        200: jsonResponse(VoidedLabelSchema, 'The voided label and its refund'),
        ...controlErrors(...VOID_ERRORS),
      },
    }),
    async (c) => sendJsonText(c, await labels.void(c.get('caller'), c.req.valid('param').id), 200),
  );

  return router;
}
