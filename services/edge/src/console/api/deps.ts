import type { AuthService, BillingService, GenerationService, WebhookService } from "@orvado/proto";
import type { Client } from "@orvado/rpc";

export interface ConsoleApiDeps {
  auth: Client<typeof AuthService>;
  billing: Client<typeof BillingService>;
  generation: Client<typeof GenerationService>;
  /** Served by generation's replicas beside GenerationService. */
  webhooks: Client<typeof WebhookService>;
  /** Base of image links; unset means the address the browser used. */
  publicUrl?: string;
  /** How often a streamed playground answer sends its keep-alive comment (EDGE_STREAM_HEARTBEAT_MS). */
  heartbeatMs: number;
}
