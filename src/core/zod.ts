import { extendZodWithOpenApi } from '@asteasolutions/zod-to-openapi';
import { z } from 'zod';

/**
 * zod, with `.openapi()` for what a schema shows in the OpenAPI document: the resources' schemas
 * import it from here rather than from `@hono/zod-openapi`, which extends the same zod in the same
 * way, so that only the HTTP layer and the routes know the framework.
 */
extendZodWithOpenApi(z);

export { z };
