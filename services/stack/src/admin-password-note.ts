import { AuthService, Role } from "@orvado/proto";
import { internalClient } from "@orvado/rpc";

// The start banner's line about the admin's password. Auth generates it at the first start
// (no ORVADO_ADMIN_PASSWORD) and prints it once, in its log; it keeps only a hash, so the
// banner can only say where it was printed, and that it is still the generated one.

export const GENERATED_PASSWORD_LOG_TEXT = "created admin account <email> with generated password <password>";

/** Null once every admin has chosen their password. An admin created after startedAtMs was created by this start. */
export async function adminPasswordNote(stack: { authUrl: string; internalSecret: string }, startedAtMs: number): Promise<string | null> {
  const auth = internalClient(AuthService, stack.authUrl, stack.internalSecret);
  const { accounts } = await auth.listAccounts({});
  const admin = accounts.find((account) => account.role === Role.ADMIN && account.passwordGenerated);
  if (!admin) return null;
  const where = Number(admin.createdAtUnixMs) >= startedAtMs
    ? "printed once in the log above"
    : "printed once in the log of the first start (it is stored only as a hash and cannot be shown again)";
  return `Admin ${admin.email}: the generated password was ${where}, in the line "${GENERATED_PASSWORD_LOG_TEXT}"; the console asks to change it at sign-in.`;
}
