import assert from "node:assert/strict";
import { parseBootcArgs } from "./cli.ts";

function usageError(argv: string[], version = "1.16.10"): string {
  const r = parseBootcArgs(argv, version);
  assert.ok(!r.ok, `expected a usage error for ${argv.join(" ")}`);
  return r.usageError;
}

Deno.test("switch --download-only exists from 1.16.10 only; older bootc gives clap's error", () => {
  const ok = parseBootcArgs(["switch", "--download-only", "reg/os:v2"], "1.16.10");
  assert.ok(ok.ok);
  assert.deepEqual(
    ok.command.kind === "switch" && [ok.command.downloadOnly, ok.command.target],
    [true, "reg/os:v2"],
  );
  const err = usageError(["switch", "--download-only", "reg/os:v2"], "1.12.0");
  assert.match(err, /^error: unexpected argument '--download-only' found\n/);
  assert.match(err, /Usage: bootc switch \[OPTIONS\] <TARGET>/);
  assert.match(err, /For more information, try '--help'\.\n$/);
  assert.match(usageError(["switch", "--from-downloaded"], "1.12.0"), /'--from-downloaded'/);
});

Deno.test("upgrade --download-only / --from-downloaded exist from 1.12", () => {
  assert.ok(parseBootcArgs(["upgrade", "--download-only"], "1.12.0").ok);
  assert.ok(parseBootcArgs(["upgrade", "--from-downloaded", "--apply"], "1.12.0").ok);
  assert.match(usageError(["upgrade", "--download-only"], "1.10"), /unexpected argument/);
});

Deno.test("clap conflicts: --download-only with --apply, --from-downloaded with a target", () => {
  assert.match(
    usageError(["upgrade", "--download-only", "--apply"]),
    /^error: the argument '--download-only' cannot be used with '--apply'/,
  );
  assert.match(
    usageError(["switch", "--download-only", "--apply", "x/y:z"]),
    /cannot be used with '--apply'/,
  );
  assert.match(usageError(["switch", "--from-downloaded", "x/y:z"]), /cannot be used with/);
  const r = parseBootcArgs(
    ["switch", "--from-downloaded", "--apply", "--soft-reboot=auto"],
    "1.16.10",
  );
  assert.ok(r.ok && r.command.kind === "switch");
  assert.equal(r.command.target, null);
  assert.equal(r.command.softReboot, "auto");
});

Deno.test("--soft-reboot takes required or auto, with = or as the next argument", () => {
  const r = parseBootcArgs(["switch", "--soft-reboot", "required", "x/y:z"], "1.16.10");
  assert.ok(r.ok && r.command.kind === "switch" && r.command.softReboot === "required");
  assert.equal(
    usageError(["switch", "--soft-reboot=maybe", "x/y:z"]),
    "error: invalid value 'maybe' for '--soft-reboot <SOFT_REBOOT>'\n  [possible values: required, auto]\n\nFor more information, try '--help'.\n",
  );
});

Deno.test("status accepts --format=json, --json, --format-version and --booted", () => {
  const r = parseBootcArgs(
    ["status", "--format=json", "--format-version=1", "--booted"],
    "1.16.10",
  );
  assert.ok(r.ok && r.command.kind === "status");
  assert.deepEqual(
    [r.command.format, r.command.formatVersion, r.command.booted],
    ["json", 1, true],
  );
  const legacy = parseBootcArgs(["status", "--json"], "1.10");
  assert.ok(legacy.ok && legacy.command.kind === "status" && legacy.command.json);
  assert.match(
    usageError(["status", "--format=xml"]),
    /invalid value 'xml' for '--format <FORMAT>'/,
  );
  assert.match(usageError(["status", "--format-version=one"]), /invalid digit found in string/);
});

Deno.test("a missing target, an unknown flag and an unknown subcommand are usage errors", () => {
  assert.match(
    usageError(["switch"], "1.12.0"),
    /^error: the following required arguments were not provided:\n {2}<TARGET>\n/,
  );
  assert.match(usageError(["switch"]), /<TARGET>/);
  const unknown = usageError(["switch", "--bogus", "x/y:z"]);
  assert.match(unknown, /^error: unexpected argument '--bogus' found\n\n {2}tip: /);
  assert.match(usageError(["frobnicate"]), /^error: unrecognized subcommand 'frobnicate'/);
  assert.match(usageError(["rollback", "extra"]), /unexpected argument 'extra' found/);
});

Deno.test("--version and upgrade/update alias", () => {
  assert.deepEqual(parseBootcArgs(["--version"], "1.12.0"), {
    ok: true,
    command: { kind: "version" },
  });
  const r = parseBootcArgs(["update", "--check"], "1.16.10");
  assert.ok(r.ok && r.command.kind === "upgrade" && r.command.check);
});
