import { z } from "zod";
import { EDIT_IMAGE_COUNT_CEILING, EDIT_UPLOAD_BYTES_CEILING, commaListSchema, parseEnv, portSchema, rpcTransportSchema, serviceUrlsSchema } from "@orvado/core";

const schema = z.object({
  EDGE_HOST: z.string().default("127.0.0.1"),
  PORT: portSchema.default(8080),
  ORVADO_INTERNAL_SECRET: z.string().min(16, "must be at least 16 characters"),
  ORVADO_AUTH_URL: serviceUrlsSchema("http://127.0.0.1:7101"),
  ORVADO_BILLING_URL: serviceUrlsSchema("http://127.0.0.1:7102"),
  ORVADO_GENERATION_URL: serviceUrlsSchema("http://127.0.0.1:7103"),
  ORVADO_PUBLIC_URL: z.string().url().optional(),
  EDGE_BODY_LIMIT_BYTES: z.coerce.number().int().min(1024).max(16 * 1024 * 1024).default(256 * 1024),
  // At most 1 s: a revoked key must stop working within 2 seconds on every edge (docs/console.md).
  EDGE_KEY_CACHE_MS: z.coerce.number().int().min(0).max(1000).default(1000),
  // A public edge: a request's headers and 256 kB body need seconds, not minutes, even on a slow
  // link; one held open longer is holding a socket. Responses are not bounded (a job may take 10 min).
  EDGE_REQUEST_TIMEOUT_MS: z.coerce.number().int().min(100).max(600_000).default(30_000),
  // Above the idle timeouts of common load balancers (AWS ALB's 60 s): a balancer must give up an
  // idle connection before the edge does, or a request it sends on it as the edge closes it is lost
  // (a 502). Fastify's own default, for that reason (docs/configuration.md#behind-a-load-balancer).
  EDGE_KEEP_ALIVE_TIMEOUT_MS: z.coerce.number().int().min(100).max(600_000).default(72_000),
  // Below the idle timeouts of common proxies and balancers (30-60 s and up), so a quiet stream is never cut.
  EDGE_STREAM_HEARTBEAT_MS: z.coerce.number().int().min(100).max(120_000).default(15_000),
  // An edit's files travel to generation in one RPC message: the ceilings bound it (@orvado/core limits.ts).
  EDGE_EDIT_MAX_IMAGES: z.coerce.number().int().min(1).max(EDIT_IMAGE_COUNT_CEILING).default(EDIT_IMAGE_COUNT_CEILING),
  EDGE_EDIT_MAX_FILE_BYTES: z.coerce.number().int().min(1024).max(EDIT_UPLOAD_BYTES_CEILING).default(16 * 1024 * 1024),
  EDGE_EDIT_MAX_TOTAL_BYTES: z.coerce.number().int().min(1024).max(EDIT_UPLOAD_BYTES_CEILING).default(48 * 1024 * 1024),
  EDGE_TRUSTED_PROXIES: commaListSchema,
  ORVADO_RPC_TRANSPORT: rpcTransportSchema,
}).transform((env) => ({
  host: env.EDGE_HOST,
  port: env.PORT,
  internalSecret: env.ORVADO_INTERNAL_SECRET,
  /** Each service's replicas (one URL or several). */
  authUrls: env.ORVADO_AUTH_URL,
  billingUrls: env.ORVADO_BILLING_URL,
  generationUrls: env.ORVADO_GENERATION_URL,
  /** In-process to a service in this process ("colocated"), or always over HTTP/2. */
  rpcTransport: env.ORVADO_RPC_TRANSPORT,
  /** Base of image links; unset means the address the client used. */
  publicUrl: env.ORVADO_PUBLIC_URL?.replace(/\/+$/, ""),
  bodyLimitBytes: env.EDGE_BODY_LIMIT_BYTES,
  /** How long a verified key is trusted without asking auth again. */
  keyCacheMs: env.EDGE_KEY_CACHE_MS,
  /** The longest a client may take to send a whole request, headers and body; then 408 and close. */
  requestTimeoutMs: env.EDGE_REQUEST_TIMEOUT_MS,
  /** How long a keep-alive connection may sit idle between requests before it is closed. */
  keepAliveTimeoutMs: env.EDGE_KEEP_ALIVE_TIMEOUT_MS,
  /** How often a streamed answer (text/event-stream) sends a `: keep-alive` comment line. */
  streamHeartbeatMs: env.EDGE_STREAM_HEARTBEAT_MS,
  /** Bounds of an image edit's multipart upload (POST /v1/images/edits). */
  edits: {
    /** Input images per edit (image or image[] parts). */
    maxImages: env.EDGE_EDIT_MAX_IMAGES,
    /** Bytes of one file (an image or the mask). */
    maxFileBytes: env.EDGE_EDIT_MAX_FILE_BYTES,
    /** Bytes of all files of one edit together. */
    maxTotalBytes: env.EDGE_EDIT_MAX_TOTAL_BYTES,
  },
  /**
   * Addresses (or CIDRs, or "loopback") of the load balancers in front of this
   * edge: only their X-Forwarded-For is believed, so limits per client address
   * (sign-in, the cost lookup) count the client, not the balancer. Empty: none.
   */
  trustedProxies: env.EDGE_TRUSTED_PROXIES,
}));

/** The edge's settings, as the schema above reads them from the environment. */
export type EdgeConfig = z.output<typeof schema>;
/** Bounds of an image edit's multipart upload. */
export type EditUploadLimits = EdgeConfig["edits"];

export function loadEdgeConfig(env: NodeJS.ProcessEnv = process.env): EdgeConfig {
  return parseEnv(schema, env);
}

