/**
 * The controller's V8 flags as its Deployment ships them (manifests/controller.yaml),
 * so measurement scripts run what users run.
 *
 * @module
 */

/** The `DENO_V8_FLAGS` value in manifests/controller.yaml ("" when it sets none). */
export async function shippedControllerV8Flags(): Promise<string> {
  const manifest = await Deno.readTextFile(
    new URL("../manifests/controller.yaml", import.meta.url),
  );
  return /name: DENO_V8_FLAGS\s+value: (\S+)/.exec(manifest)?.[1] ?? "";
}
