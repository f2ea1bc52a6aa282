// Settings of different services that are only safe together. Each service's config
// loader checks every rule with its own values and, for the other service's, the value
// in its environment or that setting's default (all services of a deployment should
// get one environment; `npm start` gives them one). A broken rule refuses to start,
// naming the variables, instead of letting a hold expire under a running job.

/** The defaults of the settings the rules compare; the services' config schemas use them too. */
export const TIMING_DEFAULTS = {
  BILLING_HOLD_TTL_MS: 15 * 60_000,
  BILLING_SWEEP_INTERVAL_MS: 30_000,
  GENERATION_JOB_TIMEOUT_MS: 600_000,
  GENERATION_ORPHAN_GRACE_MS: 60_000,
} as const;

/** How long an Idempotency-Key is kept (generation's idempotency.ts); fixed, not configurable. */
export const IDEMPOTENCY_KEY_TTL_MS = 86_400_000;

export type TimingSetting = keyof typeof TIMING_DEFAULTS;
export type Timings = Record<TimingSetting, number>;

interface Rule {
  name: string;
  holds(t: Timings): boolean;
  message(t: Timings): string;
}

/** The longest a job can be 'running': its time limit, then the grace before the orphan sweeper fails it. */
const jobLifetime = (t: Timings) => t.GENERATION_JOB_TIMEOUT_MS + t.GENERATION_ORPHAN_GRACE_MS;

export const SETTINGS_THAT_MUST_AGREE: readonly Rule[] = [
  {
    // Otherwise billing's sweeper releases a running job's hold, the account spends the money
    // again, and the job's late completion still captures: an overdraft.
    name: "a hold outlives its job",
    holds: (t) => t.BILLING_HOLD_TTL_MS > jobLifetime(t),
    message: (t) =>
      `BILLING_HOLD_TTL_MS (${t.BILLING_HOLD_TTL_MS}) must be longer than GENERATION_JOB_TIMEOUT_MS (${t.GENERATION_JOB_TIMEOUT_MS}) + GENERATION_ORPHAN_GRACE_MS (${t.GENERATION_ORPHAN_GRACE_MS}) = ${jobLifetime(t)}: a hold must not expire while its job can still run`,
  },
  {
    // Otherwise a retry with the same key after it expired starts (and charges) a second job while the first runs.
    name: "an Idempotency-Key outlives its job",
    holds: (t) => IDEMPOTENCY_KEY_TTL_MS > jobLifetime(t),
    message: (t) =>
      `GENERATION_JOB_TIMEOUT_MS (${t.GENERATION_JOB_TIMEOUT_MS}) + GENERATION_ORPHAN_GRACE_MS (${t.GENERATION_ORPHAN_GRACE_MS}) must be shorter than the Idempotency-Key lifetime (${IDEMPOTENCY_KEY_TTL_MS} ms)`,
  },
  {
    // Otherwise the sweep, not the lifetime, decides when an expired hold frees the money.
    name: "the hold sweeper runs within a hold's lifetime",
    holds: (t) => t.BILLING_SWEEP_INTERVAL_MS < t.BILLING_HOLD_TTL_MS,
    message: (t) => `BILLING_SWEEP_INTERVAL_MS (${t.BILLING_SWEEP_INTERVAL_MS}) must be shorter than BILLING_HOLD_TTL_MS (${t.BILLING_HOLD_TTL_MS})`,
  },
];

/**
 * The timings as one process sees them: its own parsed values, the other service's from
 * the environment (an integer), or the default.
 */
export function timingsFrom(own: Partial<Timings>, env: NodeJS.ProcessEnv): Timings {
  const read = (name: TimingSetting): number => {
    const mine = own[name];
    if (mine !== undefined) return mine;
    const text = env[name]?.trim();
    return text !== undefined && /^\d+$/.test(text) ? Number(text) : TIMING_DEFAULTS[name];
  };
  return Object.fromEntries(Object.keys(TIMING_DEFAULTS).map((name) => [name, read(name as TimingSetting)])) as Timings;
}

/** Throws, naming every broken rule and its variables, when the settings do not agree. */
export function checkSettingsAgree(timings: Timings): void {
  const broken = SETTINGS_THAT_MUST_AGREE.filter((rule) => !rule.holds(timings));
  if (broken.length === 0) return;
  throw new Error(`Invalid configuration (settings that must agree):\n${broken.map((rule) => `  ${rule.name}: ${rule.message(timings)}`).join("\n")}`);
}
