import { newId } from "@orvado/core";
import { AuthService, BillingService, GenerationService, WebhookService } from "@orvado/proto";
import { Code, internalClient } from "@orvado/rpc";
import { parseCommandLine } from "./args.ts";
import { userInfo } from "node:os";
import { Printed, RpcFailure, runCommand, type ServiceName } from "./commands.ts";
import { ConfigError, loadConfig, type CliConfig } from "./config.ts";
import { render } from "./format.ts";

export interface CliIo {
  stdout(text: string): void;
  stderr(text: string): void;
  env: NodeJS.ProcessEnv;
}

export const EXIT_OK = 0;
export const EXIT_FAILED = 1;
export const EXIT_USAGE = 2;

/** Runs one command line in-process and returns its exit code; never calls process.exit. */
export async function runCli(argv: string[], io: CliIo): Promise<number> {
  const parsed = parseCommandLine(argv);
  if (parsed.kind === "help") {
    io.stdout(parsed.text);
    return EXIT_OK;
  }
  if (parsed.kind === "error") {
    io.stderr(`orvado: ${parsed.message}\n`);
    return EXIT_USAGE;
  }
  let config: CliConfig;
  try {
    config = loadConfig(io.env);
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    io.stderr(`orvado: ${error.message}\n`);
    return EXIT_USAGE;
  }
  const clients = {
    auth: internalClient(AuthService, config.authUrls, config.secret),
    billing: internalClient(BillingService, config.billingUrls, config.secret),
    generation: internalClient(GenerationService, config.generationUrls, config.secret),
    webhooks: internalClient(WebhookService, config.generationUrls, config.secret),
  };
  try {
    const operator = `cli:${io.env.USER ?? safeUserName()}`;
    const output = await runCommand({ clients, now: Date.now, newTopUpId: () => newId("topup"), operator }, parsed.command);
    if (output instanceof Printed) {
      io.stdout(output.text);
      return output.exitCode === 0 ? EXIT_OK : EXIT_FAILED;
    }
    io.stdout(render(output));
    return EXIT_OK;
  } catch (error) {
    io.stderr(`orvado: ${error instanceof RpcFailure ? describeFailure(error, config) : (error as Error).message}\n`);
    return EXIT_FAILED;
  }
}

function safeUserName(): string {
  try {
    return userInfo().username;
  } catch {
    return "unknown";
  }
}

const UNREACHABLE = /ECONNREFUSED|ENOTFOUND|EHOSTUNREACH|ENETUNREACH|EAI_AGAIN|ECONNRESET/;

function describeFailure(failure: RpcFailure, config: CliConfig): string {
  const { error, service, what } = failure;
  const url = urlOf(service, config);
  const detail = `${error.message} ${String((error.cause as Error | undefined)?.message ?? "")}`;
  if (error.code === Code.Unavailable && UNREACHABLE.test(detail)) {
    return `${what}: the ${service} service at ${url} is not reachable (is \`npm start\` running?)`;
  }
  if (error.code === Code.Unauthenticated) {
    return `${what}: ${error.message} (the ${service} service at ${url} rejected the internal secret: check ORVADO_INTERNAL_SECRET)`;
  }
  if (error.code === Code.DeadlineExceeded) {
    return `${what}: the ${service} service at ${url} did not answer in time (${error.message})`;
  }
  return `${what}: ${error.message}`;
}

function urlOf(service: ServiceName, config: CliConfig): string {
  return { auth: config.authUrls, billing: config.billingUrls, generation: config.generationUrls, webhooks: config.generationUrls }[service].join(", ");
}
