import assert from "node:assert/strict";
import {
  detectHostAccess,
  nsenterPrefix,
  planHostAccess,
  readMountNamespace,
} from "./host_namespace.ts";

const SAME = { ok: true as const, link: "mnt:[4026531832]" };
const OTHER = { ok: true as const, link: "mnt:[4026532176]" };
const DENIED = { ok: false as const, error: "permission denied" };

Deno.test("planHostAccess: the host's own namespace runs commands directly with root /", () => {
  const access = planHostAccess({ hostPid: 1, self: SAME, target: SAME });
  assert.equal(access.mode, "host");
  assert.deepEqual(access.hostExecPrefix, []);
  assert.equal(access.hostRoot, "/");
  assert.equal(access.warning, false);
  assert.match(access.reason, /host's mount namespace \(mnt:\[4026531832\]/);
});

Deno.test("planHostAccess: another namespace enters PID 1's with nsenter and sees /proc/1/root", () => {
  const access = planHostAccess({ hostPid: 1, self: OTHER, target: SAME });
  assert.equal(access.mode, "nsenter");
  assert.deepEqual(access.hostExecPrefix, ["nsenter", "--mount=/proc/1/ns/mnt", "--"]);
  assert.equal(access.hostRoot, "/proc/1/root");
  assert.match(access.reason, /not PID 1's mnt:\[4026531832\]/);
  // Another process stands for the host (tests, unusual PID namespaces).
  const other = planHostAccess({ hostPid: 4242, self: SAME, target: OTHER });
  assert.deepEqual(other.hostExecPrefix, nsenterPrefix(4242));
  assert.equal(other.hostRoot, "/proc/4242/root");
});

Deno.test("planHostAccess: an unreadable PID 1 link runs directly and says why", () => {
  const access = planHostAccess({ hostPid: 1, self: SAME, target: DENIED });
  assert.equal(access.mode, "unreadable");
  assert.deepEqual(access.hostExecPrefix, []);
  assert.equal(access.hostRoot, "/");
  assert.equal(access.warning, true);
  assert.match(access.reason, /^cannot read \/proc\/1\/ns\/mnt: permission denied; so it cannot/);
  assert.match(access.reason, /--host-exec-prefix and --host-root/);
  const noProc = planHostAccess({
    hostPid: 1,
    self: { ok: false, error: "not found: /proc is not mounted" },
    target: SAME,
  });
  assert.equal(noProc.mode, "unreadable");
  assert.match(noProc.reason, /^cannot read \/proc\/self\/ns\/mnt: not found/);
});

Deno.test("planHostAccess: explicit settings win, each on its own", () => {
  const both = planHostAccess({ hostPid: 1, hostExecPrefix: [], hostRoot: "/r" });
  assert.equal(both.mode, "explicit");
  assert.deepEqual(both.hostExecPrefix, []);
  assert.equal(both.hostRoot, "/r");
  const prefixOnly = planHostAccess({ hostPid: 1, self: OTHER, target: SAME, hostExecPrefix: [] });
  assert.equal(prefixOnly.mode, "nsenter");
  assert.deepEqual(prefixOnly.hostExecPrefix, []);
  assert.equal(prefixOnly.hostRoot, "/proc/1/root");
  assert.match(prefixOnly.reason, /\(--host-exec-prefix given explicitly\)$/);
  const rootOnly = planHostAccess({ hostPid: 1, self: OTHER, target: SAME, hostRoot: "/h" });
  assert.deepEqual(rootOnly.hostExecPrefix, nsenterPrefix(1));
  assert.equal(rootOnly.hostRoot, "/h");
});

Deno.test("readMountNamespace reads links and explains failures", async () => {
  const proc = await Deno.makeTempDir();
  try {
    await Deno.mkdir(`${proc}/self/ns`, { recursive: true });
    await Deno.symlink("mnt:[1]", `${proc}/self/ns/mnt`);
    assert.deepEqual(await readMountNamespace("self", proc), { ok: true, link: "mnt:[1]" });
    const missing = await readMountNamespace(7, proc);
    assert.equal(missing.ok, false);
    assert.match(!missing.ok ? missing.error : "", /no process 7/);
  } finally {
    await Deno.remove(proc, { recursive: true });
  }
});

Deno.test("detectHostAccess compares the real links (this process against itself: host)", async () => {
  const access = await detectHostAccess({ hostPid: Deno.pid });
  assert.equal(access.mode, "host");
  assert.deepEqual(access.hostExecPrefix, []);
  // Nothing is read when both are explicit.
  const explicit = await detectHostAccess({
    procRoot: "/nonexistent",
    hostExecPrefix: ["x"],
    hostRoot: "/",
  });
  assert.equal(explicit.mode, "explicit");
});
