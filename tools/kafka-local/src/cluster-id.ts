import { randomBytes } from "node:crypto";

/**
 * A new KRaft cluster id: 16 random bytes as base64url without padding (Kafka's Uuid).
 * One starting with "-" is drawn again, as Kafka's own Uuid.randomUuid does: the storage
 * tool's argument parser would take it for an option (one id in 64 would fail to format).
 */
export function newClusterId(): string {
  for (;;) {
    const id = randomBytes(16).toString("base64url");
    if (!id.startsWith("-")) return id;
  }
}
