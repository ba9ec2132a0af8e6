/** The options the in-process CPU benches share (bench/api-cpu.ts, bench/beacons-cpu.ts): `--requests`, `--rounds`, `--only`, and numbers of their own. */
const argv = process.argv;

/** `--<name> <number>`, else `d`. */
export const numArg = (name: string, d: number): number => {
  const i = argv.indexOf(`--${name}`);
  return i > 0 ? Number(argv[i + 1]) : d;
};

export const cpuArgs = () => ({
  requests: numArg("requests", 20_000),
  rounds: numArg("rounds", 3),
  /** Only the stages or routes whose name contains it. */
  only: argv.includes("--only") ? argv[argv.indexOf("--only") + 1]! : "",
});
