// A stand-in for a service process whose platform has no setpriv: it runs a
// long native ffmpeg with the pid-file registry only (no parent-death signal),
// prints the child's pid, and waits to be killed.
// Usage: bun orphan-parent.ts <pid dir> <marker>
import { createChildRegistry } from "../../media/transcoder/child-processes.ts";
import { createNativeRunner } from "../../media/transcoder/native-runner.ts";

const [dir, marker] = process.argv.slice(2) as [string, string];
const runner = createNativeRunner({ parentDeathSignal: false, children: createChildRegistry(dir) });
const run = runner.run({
  tool: "ffmpeg",
  // Real time (-re) silence: cheap, and long enough to outlive this process.
  args: ["-nostdin", "-v", "error", "-re", "-f", "lavfi", "-i", "anullsrc=r=8000:cl=mono", "-t", "120", "-metadata", `comment=${marker}`, "-f", "null", "-"],
  files: {},
  signal: new AbortController().signal,
});
run.catch(() => undefined);
const poll = setInterval(() => {
  const [file] = new Bun.Glob("*.json").scanSync(dir);
  if (file) {
    console.log(`child ${file.replace(/\.json$/, "")}`);
    clearInterval(poll);
  }
}, 20);
await Bun.sleep(600_000);
