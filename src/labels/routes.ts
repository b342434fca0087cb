import { createRoute, z } from '@hono/zod-openapi';
import type { Context } from 'hono';
import { requireScope } from '../http/auth.js';
import {
  BEARER_SECURITY,
  COMMON_ERRORS,
  createRouter,
  errorResponses,
  idParam,
  jsonBody,
  jsonResponse,
  sendJsonText,
} from '../http/router.js';
import type { RenderedLabel } from './render/index.js';
import { CreateLabelSchema, LabelSchema, VoidedLabelSchema } from './schema.js';
import { type LabelService, labelFileName } from './service.js';
import type { LabelRecord } from './store.js';

const IdParam = idParam('lbl_01JD…');
const FileParam = z.object({
  file: z.string().openapi({ param: { name: 'file', in: 'path' }, example: 'lbl_01JD….pdf' }),
});
const SignatureQuery = z.object({
  expires: z
    .string()
    .optional()
    .openapi({ param: { name: 'expires', in: 'query' } }),
  signature: z
    .string()
    .optional()
    .openapi({ param: { name: 'signature', in: 'query' } }),
});
const security = BEARER_SECURITY;
const tags = ['Labels'];
const binary = z.string().openapi({ format: 'binary' });
const FILE_CONTENT = {
  'application/pdf': { schema: binary },
  'image/png': { schema: binary },
  'application/zpl': { schema: binary },
};

/** `{cdn_url}`: the configured origin, or this server's own as the client reached it. */
type CdnBase = (c: Context) => string;

export function labelRoutes(labels: LabelService, cdnBase: CdnBase) {
  const router = createRouter();
  const read = requireScope('shipments:read');
  const write = requireScope('shipments:write');

  router.openapi(
    createRoute({
      method: 'post',
      path: '/labels',
      tags,
      summary: 'Generate a label for a shipment',
      security,
      middleware: [write] as const,
      request: { body: jsonBody(CreateLabelSchema) },
      responses: {
        201: jsonResponse(LabelSchema, 'The label, with a pre-signed URL valid 7 days'),
        ...errorResponses(...COMMON_ERRORS, 404, 422),
      },
    }),
    (c) => sendJsonText(c, labels.generate(c.get('caller'), c.req.valid('json'), cdnBase(c)), 201),
  );

  router.openapi(
    createRoute({
      method: 'get',
      path: '/labels/{id}',
      tags,
      summary: 'Get a label',
      security,
      middleware: [read] as const,
      request: { params: IdParam },
      responses: { 200: jsonResponse(LabelSchema, 'The label'), ...errorResponses(...COMMON_ERRORS, 404) },
    }),
    (c) => c.json(labels.present(labels.get(c.get('caller'), c.req.valid('param').id), cdnBase(c)), 200),
  );

  router.openapi(
    createRoute({
      method: 'get',
      path: '/labels/{id}/download',
      tags,
      summary: 'Download the label file',
      security,
      middleware: [read] as const,
      request: { params: IdParam },
      responses: {
        200: { description: 'The label file', content: FILE_CONTENT },
        ...errorResponses(...COMMON_ERRORS, 404),
      },
    }),
    async (c) => {
      const caller = c.get('caller');
      const label = labels.get(caller, c.req.valid('param').id);
      return sendFile(c, label, await labels.file(caller, label));
    },
  );

  router.openapi(
    createRoute({
      method: 'delete',
      path: '/labels/{id}',
      tags,
      summary: 'Void a label and refund it',
      security,
      middleware: [write] as const,
      request: { params: IdParam },
      responses: {
        200: jsonResponse(VoidedLabelSchema, 'The voided label and its refund'),
        ...errorResponses(...COMMON_ERRORS, 404, 422),
      },
    }),
    (c) => sendJsonText(c, labels.void(c.get('caller'), c.req.valid('param').id), 200),
  );

  return router;
}

/** The CDN: pre-signed label URLs, served without an API key. */
export function cdnRoutes(labels: LabelService) {
  const router = createRouter();
  router.openapi(
    createRoute({
      method: 'get',
      path: '/labels/{file}',
      tags: ['CDN'],
      summary: 'Download a label through its pre-signed URL (no API key)',
      security: [],
      request: { params: FileParam, query: SignatureQuery },
      responses: {
        200: { description: 'The label file', content: FILE_CONTENT },
        ...errorResponses(403, 404, 500),
      },
    }),
    async (c) => {
      const { expires, signature } = c.req.valid('query');
      const found = await labels.fileBySignedUrl(c.req.valid('param').file, expires, signature);
      return sendFile(c, found.label, found.file);
    },
  );
  return router;
}

function sendFile(c: Context, label: LabelRecord, file: RenderedLabel) {
  return c.body(file.bytes as Uint8Array<ArrayBuffer>, 200, {
    'content-type': file.contentType,
    'content-disposition': `attachment; filename="${labelFileName(label)}"`,
    'cache-control': 'private, max-age=300',
  });
}
