import assert from "node:assert/strict";
import { formatPeaks, mergePeaks, podWorkingSets, type StatsSummary } from "./pod_memory.ts";

const MiB = 1 << 20;

Deno.test("podWorkingSets: the namespace's pods with a working set, by name", () => {
  const summary: StatsSummary = {
    pods: [
      {
        podRef: { name: "bootc-operator-daemon-x", namespace: "bootc-operator" },
        memory: { workingSetBytes: 17 * MiB, rssBytes: 15 * MiB },
      },
      { podRef: { name: "web-1", namespace: "default" }, memory: { workingSetBytes: MiB } },
      { podRef: { name: "starting", namespace: "bootc-operator" }, memory: {} },
    ],
  };
  assert.deepEqual(
    [...podWorkingSets(summary, "bootc-operator")],
    [["bootc-operator-daemon-x", 17 * MiB]],
  );
  assert.equal(podWorkingSets({}, "bootc-operator").size, 0);
});

Deno.test("mergePeaks keeps each pod's highest working set; formatPeaks prints them sorted", () => {
  const peaks = new Map<string, number>();
  mergePeaks(peaks, new Map([["b", 40 * MiB], ["a", 10 * MiB]]));
  mergePeaks(peaks, new Map([["b", 30 * MiB], ["a", 12 * MiB], ["c", 1.5 * MiB]]));
  assert.deepEqual([...peaks].sort(), [["a", 12 * MiB], ["b", 40 * MiB], ["c", 1.5 * MiB]]);
  assert.equal(formatPeaks(peaks), "a 12.0 MiB, b 40.0 MiB, c 1.5 MiB");
});
