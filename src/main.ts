import { ConfigError, loadConfig } from "./config.ts";
import { createService } from "./service.ts";
import { bootstrapDefaultOrg } from "./orgs/bootstrap.ts";
import { recordServiceUrl } from "./service-address.ts";

// `npm start -- ARGS`: the server takes its settings from the environment only. Checked before anything
// is read or created, so `--help` or a stray flag never starts the service or makes ./data (issue 16).
const args = process.argv.slice(2);
if (args.includes("--help") || args.includes("-h")) {
  console.log(
    [
      "Usage: npm start",
      "",
      "  Starts vidlive: the HTTP API (PORT, default 8080) and RTMP ingest (RTMP_PORT, default 1935).",
      "  Its address (BASE_URL, or http://localhost:PORT) goes to DATA_DIR/service-url: npm run demo and the CLI use it.",
      "  Settings come from environment variables (DATA_DIR, DATABASE_URL, BASE_URL, STORAGE, SECRET_KEY, …);",
      '  every one, with its default, is in README.md, section "Configuration".',
      "",
      "  -h, --help  this help",
      "",
      "Operator commands (organizations, keys, webhooks on a laptop): npm run cli -- --help",
    ].join("\n"),
  );
  process.exit(0);
}
if (args.length > 0) {
  const arg = args[0]!;
  const what = arg.startsWith("-") ? `unknown flag ${arg.split("=")[0]}` : `unexpected argument ${JSON.stringify(arg)}`;
  console.error(`${what}: npm start takes no arguments, settings are environment variables (npm start -- --help)`);
  process.exit(2);
}

// Everything the service writes (database, media, uploads, recordings, the key file) is for its own user only.
process.umask(0o077);
/**
 * A configuration mistake is one readable line on stderr and exit code 2, not a
 * stack trace (issue 16): ConfigError (loadConfig, and start-up steps through
 * src/startup-errors.ts) and a listener the OS refuses (port taken, privileged,
 * HOST not an address of this machine).
 */
function refuse(err: unknown): never {
  const code = (err as { code?: string } | null)?.code;
  const message = err instanceof Error ? (err.message.split("\n")[0] ?? "") : String(err);
  if (err instanceof ConfigError) console.error(`configuration: ${err.message}`);
  else if (code === "EADDRINUSE") console.error(`configuration: cannot listen, the address is in use (${message}); set PORT or RTMP_PORT`);
  else if (code === "EACCES") console.error(`configuration: cannot listen, permission denied (${message}); a port below 1024 needs privileges: set PORT or RTMP_PORT`);
  else if (code === "EADDRNOTAVAIL" || code === "EINVAL")
    console.error(`configuration: cannot listen on HOST "${config?.hostname}" (${message}); set HOST to an address of this machine, e.g. 0.0.0.0`);
  else throw err;
  process.exit(2);
}
let config: ReturnType<typeof loadConfig> | undefined;
config = (() => {
  try {
    return loadConfig();
  } catch (err) {
    return refuse(err);
  }
})();
const service = await createService(config).catch(refuse);
const boot = await bootstrapDefaultOrg(service.orgs);
await service.listen().catch(refuse);
// The address the demo and the CLI use from another terminal when theirs names none (src/service-address.ts).
try {
  recordServiceUrl(config.dataDir, service.config.baseUrl);
} catch (err) {
  service.logger.warn("Cannot record the service's address for the CLI and the demo", { err });
}
if (boot) {
  // Printed once, on the first start with an empty database: the key is stored only as a hash.
  // On stderr, apart from the JSON logs on stdout (a log collector never stores it), with the next step.
  console.error(
    [
      "",
      `Default organization ${boot.orgId} created. API key (shown once): ${boot.apiKey}`,
      "Next, in another terminal in this folder:",
      `  export VIDLIVE_API_KEY=${boot.apiKey}`,
      `  export VIDLIVE_API_URL=${service.config.baseUrl}`,
      "  npm run demo",
      "",
    ].join("\n"),
  );
}
console.error(`API: ${service.config.baseUrl}/api/public/v1/  Docs: ${service.config.baseUrl}/openapi`);

let stopping = false;
for (const sig of ["SIGINT", "SIGTERM"] as const) {
  process.on(sig, () => {
    if (stopping) return;
    stopping = true;
    service.logger.info("Shutting down", { signal: sig });
    service.stop().then(
      () => process.exit(0),
      (err) => {
        service.logger.error("Cannot shut down cleanly", { err });
        process.exit(1);
      },
    );
  });
}
