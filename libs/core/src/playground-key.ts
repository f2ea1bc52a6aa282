// The key identity the console playground charges under: one per account, so the
// spend of one account's playground never shares a billing.key_spend row with
// another's. Ledger entries written before that carry the shared id "console";
// they count toward their account's playground key (billing migration 009, replay).

/** The id every account's playground used before; only old ledger entries carry it. */
export const LEGACY_PLAYGROUND_KEY_ID = "console";

/** The console filter and the usage rows name the playground by this word. */
export const PLAYGROUND_KEY_ALIAS = "console";

const PREFIX = "console-";

export const playgroundKeyId = (accountId: string) => `${PREFIX}${accountId}`;

export const isPlaygroundKeyId = (keyId: string) => keyId === LEGACY_PLAYGROUND_KEY_ID || keyId.startsWith(PREFIX);

/** The key a ledger entry's spend counts toward (the legacy shared id becomes the account's own). */
export const spendKeyOf = (accountId: string, keyId: string) => (keyId === LEGACY_PLAYGROUND_KEY_ID ? playgroundKeyId(accountId) : keyId);
