import assert from "node:assert/strict";
import { findWatchTarget, resolveInRoot, watchHost } from "./host_watch.ts";
import { waitFor } from "./testing.ts";

Deno.test("resolveInRoot follows absolute links relative to the host root", async () => {
  const root = await Deno.makeTempDir();
  try {
    await Deno.mkdir(`${root}/sysroot/ostree/bootc`, { recursive: true });
    // On the host, /ostree -> sysroot/ostree; an absolute link must not escape the root.
    await Deno.symlink("/sysroot/ostree", `${root}/ostree`);
    assert.equal(await resolveInRoot(root, "ostree/bootc"), `${root}/sysroot/ostree/bootc`);
    await Deno.remove(`${root}/ostree`);
    await Deno.symlink("sysroot/ostree", `${root}/ostree`);
    assert.equal(await resolveInRoot(root, "/ostree/bootc"), `${root}/sysroot/ostree/bootc`);
    assert.equal(await resolveInRoot(root, "missing/x"), undefined);
  } finally {
    await Deno.remove(root, { recursive: true });
  }
});

Deno.test("findWatchTarget prefers /ostree/bootc, falls back to the composefs state folder", async () => {
  const root = await Deno.makeTempDir();
  try {
    assert.equal(await findWatchTarget(root), undefined);
    await Deno.mkdir(`${root}/sysroot/state/deploy`, { recursive: true });
    // A dangling /ostree/bootc (composefs) is skipped.
    await Deno.mkdir(`${root}/ostree`);
    await Deno.symlink("/nowhere", `${root}/ostree/bootc`);
    assert.equal(await findWatchTarget(root), `${root}/sysroot/state/deploy`);
    await Deno.remove(`${root}/ostree/bootc`);
    await Deno.mkdir(`${root}/ostree/bootc`);
    assert.equal(await findWatchTarget(root), `${root}/ostree/bootc`);
  } finally {
    await Deno.remove(root, { recursive: true });
  }
});

Deno.test("watchHost reports an mtime touch (debounced) and picks up a late directory", async () => {
  const root = await Deno.makeTempDir();
  const controller = new AbortController();
  let changes = 0;
  let target: string | undefined;
  const done = watchHost({
    hostRoot: root,
    debounceMs: 30,
    retryMs: 20,
    onChange: () => changes++,
    onTarget: (t) => target = t,
  }, controller.signal);
  try {
    await waitFor(() => target === undefined, "no target yet");
    await Deno.mkdir(`${root}/ostree/bootc`, { recursive: true });
    await waitFor(() => target === `${root}/ostree/bootc`, "target found");
    await new Promise((r) => setTimeout(r, 50));
    const before = changes;
    // bootc's update_mtime(): several touches in a burst give one notification.
    for (let i = 0; i < 5; i++) {
      await Deno.utime(`${root}/ostree/bootc`, new Date(), new Date(Date.now() + i * 1000));
    }
    await waitFor(() => changes > before, "change reported");
    await new Promise((r) => setTimeout(r, 100));
    assert.equal(changes, before + 1, "debounced into one");
  } finally {
    controller.abort();
    await done;
    await Deno.remove(root, { recursive: true });
  }
});
