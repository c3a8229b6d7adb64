/**
 * The host's signature policy as the daemon writes it (daemon/host_policy.ts), honoured by
 * the simulator's pulls as containers-image does: real cosign signatures in a real registry.
 */
import assert from "node:assert/strict";
import { startRegistry } from "../harness/registry.ts";
import { keyPair, sign } from "../cosign/cosign.ts";
import { HostPolicyInstaller } from "../../daemon/host_policy.ts";
import { SimulatedHost } from "./host.ts";
import { runBootc } from "./testing.ts";

Deno.test("bootc simulator: the host's policy refuses what the pool's keys did not sign", async () => {
  await using reg = await startRegistry();
  const dir = await Deno.makeTempDir({ prefix: "sim-policy-" });
  await reg.pushImage({ repository: "os", tag: "v1", version: "1" });
  const host = await SimulatedHost.create({ image: `${reg.host}/os:v1` });
  try {
    const [good, wrong] = await Promise.all([keyPair(dir, "good"), keyPair(dir, "wrong")]);
    const at = (digest: string) => `${reg.host}/os@${digest}`;
    const push = (v: string) => reg.pushImage({ repository: "os", tag: `v${v}`, version: v });
    const [signed, unsigned, wrongly, before, other] = await Promise.all([
      push("2"),
      push("3"),
      push("4"),
      push("5"),
      reg.pushImage({ repository: "elsewhere", tag: "v1", version: "1" }),
    ]);
    await sign(at(signed.digest), good.key);
    await sign(at(wrongly.digest), wrong.key);
    const stage = (image: string) => runBootc(host, ["switch", "--download-only", image]);

    // The image's default policy accepts anything: an unsigned image stages.
    assert.equal((await stage(at(before.digest))).code, 0);

    const policy = new HostPolicyInstaller(host.paths.root);
    const spec = {
      desiredImage: at(signed.digest),
      desiredImageState: "Staged" as const,
      rebootPolicy: "RebootOnly" as const,
      signatureKeys: [good.pem],
    };
    assert.equal((await policy.sync(spec)).outcome, "written");
    const refused = await stage(at(unsigned.digest));
    assert.equal(refused.code, 1);
    assert.match(refused.stderr, /A signature was required, but no signature exists/);
    const forged = await stage(at(wrongly.digest));
    assert.equal(forged.code, 1);
    assert.match(forged.stderr, /Source image rejected: Signature verification failed/);
    const ok = await stage(at(signed.digest));
    assert.equal(ok.code, 0, ok.stderr);
    // Another repository keeps the host's own policy.
    const elsewhere = await stage(`${reg.host}/elsewhere@${other.digest}`);
    assert.equal(elsewhere.code, 0, elsewhere.stderr);

    // No pool enforces any more: the host's policy is its own again.
    assert.equal((await policy.sync({ ...spec, signatureKeys: undefined })).outcome, "removed");
    assert.equal((await stage(at(unsigned.digest))).code, 0);
  } finally {
    await host.destroy();
    await Deno.remove(dir, { recursive: true });
  }
});
