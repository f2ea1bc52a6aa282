// Help text lives apart from the parser so args.ts stays about rules, not prose.

const ENVIRONMENT = `Environment:
  ORVADO_AUTH_URL         auth service; replicas as a comma-separated list of URLs
  ORVADO_BILLING_URL      billing service; likewise
  ORVADO_GENERATION_URL   generation service (channels, webhooks); likewise
                          Each one unset is read from <ORVADO_DATA_DIR or ./data>/addresses.json,
                          which \`npm start\` and start:cluster keep while they run; without
                          it the defaults are http://127.0.0.1:7101, :7102 and :7103
  ORVADO_INTERNAL_SECRET  the services' shared secret; when unset it is read from
                          <ORVADO_DATA_DIR or ./data>/secrets.json, written by \`npm start\``;

const ACCOUNTS = `Accounts:
  orvado accounts create --email E --password P [--admin]
      Create an account (role "user", or "admin" with --admin).
  orvado accounts topup --account A --usd 12.50 [--note TEXT]
      Add prepaid USD (up to 6 decimal places) to an account's balance.
  orvado accounts list [--email TEXT]
      List the accounts, oldest first, with their balances; --email keeps those
      whose email contains TEXT (case-insensitive).
  orvado accounts show --account A | --email E
      Show an account (by id, or by its exact email) with its balance, held and
      available amounts.
  orvado accounts adjust --account A --usd -1.50 --note TEXT
      Correct a balance by a signed amount (a refund, a credit, a fix). The note
      is required and kept in the ledger.
  orvado accounts disable --account A
      Turn an account off: its API keys and console sessions stop working at once.
  orvado accounts enable --account A
      Turn a disabled account back on (its keys work again; it signs in again).
  orvado accounts limits --account A [--max-concurrent N|default] [--rpm R]
      Show or set an account's fair-share limits. --max-concurrent caps the jobs it
      runs at once (0: no limit; default: the service's GENERATION_ACCOUNT_MAX_CONCURRENT_JOBS);
      --rpm caps the image requests it starts per minute, all keys together (0: no limit).
      A flag left out keeps its current value.`;

const KEYS = `Keys:
  orvado keys create --account A [--name N] [--limit-usd X] [--expires-days D] [--models m1,m2] [--rpm R]
      Create an API key. The key is printed once and cannot be shown again.
      --limit-usd caps what the key may spend; --models limits it to those model ids;
      --rpm caps the image requests it starts per minute.
  orvado keys list --account A
      List an account's keys (never their secrets), revoked ones included.
  orvado keys revoke --account A --key K
      Revoke a key of that account for good; it stops working within 2 seconds.`;

const COST = `Cost:
  orvado cost <request_id>
      Show what a request cost (status pending, charged or not_charged).`;

const PRICES = `Prices:
  orvado prices list
      List the price of one image for each model and size tier.
  orvado prices set --model M --tier 1K|2K|4K --usd 0.06 [--create] [--free] [--note TEXT]
      Change one price. It applies to requests made after it; held requests keep
      the price they were reserved at. The change is recorded with who and why.
      Without --create only a model and tier that already have a price can be
      changed, so a typo creates nothing; --create gives a model (its own id, not
      an alias) or a tier its first price, as generation asks for at start when
      the models file offers a tier without one. --usd 0 needs --free.
  orvado prices history [--model M]
      List recorded price changes, newest first.`;

const LEDGER = `Ledger:
  orvado ledger replay
      Rebuild balances, key spend and cost records from the ledger and compare them
      with the live tables. Exits 1 when any difference is found.
  orvado ledger statement --account A [--from D] [--to D] [--csv]
      Every ledger entry of an account with the balance and hold after it.
      D is a date (2026-11-01; --to includes that whole day) or an ISO time.
      --csv prints CSV instead of JSON.`;

const WEBHOOKS = `Webhooks:
  orvado webhooks create --account A --url URL [--events a,b]
      Register an endpoint for the account's job outcomes: --events takes
      image.generation.succeeded and/or image.generation.failed (default both).
      Prints the endpoint's id and its signing secret (whsec_…), shown once.
      The URL must be https or http without credentials and reach a public address
      (unless generation runs with WEBHOOK_ALLOW_PRIVATE_URLS=true).
  orvado webhooks list --account A
      List the account's endpoints (never their secrets).
  orvado webhooks delete --id ID
      Delete an endpoint and its deliveries.`;

const CHANNELS = `Channels:
  orvado channels list [--hours H]
      Each model's channels: the circuit breaker (closed, open, half-open), slots in
      use, jobs that succeeded and failed over the last H hours (default 24), and the
      channel's last upstream failure (what the upstream said, and when). Every
      generation replica shares these in PostgreSQL.
  orvado channels reset --model M --channel C
      Close the channel's breaker now, for every replica (after fixing what made it
      open). An open breaker also half-opens by itself after its cool-down.`;

const OUTPUT = `Every command prints one JSON object on stdout (ledger statement --csv prints CSV). Amounts are given twice: *_usd as a
decimal string with 6 places and *_micros as an integer string of micro-USD.
Exit codes: 0 done, 1 a service refused or could not be reached, 2 bad arguments or config.`;

export const GROUPS = ["accounts", "keys", "cost", "prices", "ledger", "channels", "webhooks"] as const;
export type Group = (typeof GROUPS)[number];

const SECTIONS: Record<Group, string> = { accounts: ACCOUNTS, keys: KEYS, cost: COST, prices: PRICES, ledger: LEDGER, channels: CHANNELS, webhooks: WEBHOOKS };

export function globalUsage(): string {
  return `orvado: the Orvado operator's command line

Usage: orvado <command> [options]    (orvado <command> --help for one command)

${ACCOUNTS}

${KEYS}

${COST}

${PRICES}

${LEDGER}

${CHANNELS}

${WEBHOOKS}

${OUTPUT}

${ENVIRONMENT}
`;
}

export function groupUsage(group: Group): string {
  return `Usage:\n\n${SECTIONS[group]}\n\n${OUTPUT}\n\n${ENVIRONMENT}\n`;
}
