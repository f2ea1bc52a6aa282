import { randomBytes } from "node:crypto";
import { Role } from "@orvado/proto";
import type { Db } from "@orvado/db";
import type { Logger } from "@orvado/core";
import { normaliseEmail } from "./input.ts";
import { adminExists, markPasswordGenerated } from "./store.ts";
import { createAccount } from "./service.ts";

export const DEFAULT_ADMIN_EMAIL = "admin@orvado.local";

/**
 * Makes sure the first start leaves an admin who can sign in. With no configured
 * credentials the password is generated and logged this once: it is stored only
 * as a hash, so a later start could not show it again.
 */
export async function ensureAdmin(
  db: Db,
  logger: Logger,
  configured: { adminEmail?: string; adminPassword?: string },
): Promise<void> {
  if (await adminExists(db)) return;
  const generated = configured.adminPassword === undefined;
  const email = normaliseEmail(configured.adminEmail ?? DEFAULT_ADMIN_EMAIL);
  const password = configured.adminPassword ?? randomBytes(18).toString("base64url");
  // Replicas starting together serialise here so only one of them creates the admin.
  const created = await db.tx(async (q) => {
    await q.query("SELECT pg_advisory_xact_lock(hashtext('orvado.auth.bootstrap-admin'))");
    if (await adminExists(q)) return "exists";
    const row = await createAccount(q, { email, password, role: Role.ADMIN });
    if (!row) return "taken";
    // The console asks for a new password until this one is changed.
    if (generated) await markPasswordGenerated(q, row.account_id);
    return "created";
  });
  if (created === "exists") return;
  if (created === "taken") {
    // Promoting an existing account is a decision for a person, not a start-up side effect.
    logger.error({ email }, "no admin account exists and the admin email belongs to a non-admin account; none created");
    return;
  }
  if (!generated) {
    logger.info({ email }, "created the admin account from ORVADO_ADMIN_EMAIL");
    return;
  }
  // The password goes in the message text on purpose: the logger redacts password fields,
  // and this one line is the only place the generated credentials ever appear.
  logger.warn(
    `created admin account ${email} with generated password ${password} ` +
      "(shown only this once: sign in and change it, or set ORVADO_ADMIN_EMAIL and ORVADO_ADMIN_PASSWORD)",
  );
}
