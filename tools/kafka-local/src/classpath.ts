// The broker's jars: resolved by Maven from deploy/kafka/pom.xml into
// deploy/kafka/target/libs on first use, reused while the pom is unchanged.
import { spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { BrokerError } from "./errors.ts";

const KAFKA_DEPLOY_DIR = fileURLToPath(new URL("../../../deploy/kafka", import.meta.url));
const POM = join(KAFKA_DEPLOY_DIR, "pom.xml");
const LIBS = join(KAFKA_DEPLOY_DIR, "target", "libs");
/** Written after a complete resolution: the pom's hash, so an edited pom resolves again. */
const STAMP = join(LIBS, ".resolved");

/** java from JAVA_HOME if set, else from PATH; a clear error when there is none or it is older than 17. */
export function javaCommand(): string {
  const java = process.env.JAVA_HOME ? join(process.env.JAVA_HOME, "bin", "java") : "java";
  const probe = spawnSync(java, ["-version"], { encoding: "utf8" });
  if (probe.error || probe.status !== 0) {
    throw new BrokerError(
      `Java was not found (${java}): the Kafka broker needs a Java 17 or newer runtime. ` +
        "Install one (for example `apt-get install openjdk-17-jre-headless`) or set JAVA_HOME.",
    );
  }
  const major = Number(/version "(?:1\.)?(\d+)/.exec(probe.stderr)?.[1] ?? 0);
  if (major < 17) throw new BrokerError(`${java} is Java ${major}; Kafka 4 needs Java 17 or newer (set JAVA_HOME).`);
  return java;
}

/** The classpath (a `dir/*` wildcard) of the broker's jars, resolving them with Maven when needed. */
export async function ensureBrokerClasspath(): Promise<string> {
  const pomHash = createHash("sha256").update(readFileSync(POM)).digest("hex");
  if (!existsSync(STAMP) || readFileSync(STAMP, "utf8").trim() !== pomHash) resolveWithMaven();
  writeFileSync(STAMP, `${pomHash}\n`);
  return `${LIBS}/*`;
}

function resolveWithMaven(): void {
  const probe = spawnSync("mvn", ["-v"], { encoding: "utf8" });
  if (probe.error || probe.status !== 0) {
    throw new BrokerError(
      "Maven (mvn) was not found: it fetches the Kafka broker from Maven Central on first use. " +
        "Install it (for example `apt-get install maven`).",
    );
  }
  process.stderr.write("Fetching the Kafka broker with Maven (first use only)…\n");
  const result = spawnSync("mvn", ["-q", "-B", "-f", POM, "package"], { encoding: "utf8" });
  if (result.status !== 0) {
    throw new BrokerError(`mvn could not resolve the Kafka broker (deploy/kafka/pom.xml):\n${(result.stdout + result.stderr).slice(-4000)}`);
  }
}
