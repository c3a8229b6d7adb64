/**
 * A tiny Prometheus registry (counters, gauges, histograms with labels) that
 * renders the text exposition format, and the controller's metrics on it.
 *
 * @module
 */

type Labels = Record<string, string>;

function labelKey(names: readonly string[], labels: Labels): string {
  return JSON.stringify(names.map((n) => labels[n] ?? ""));
}

function escapeLabel(value: string): string {
  return value.replace(/\\/g, "\\\\").replace(/\n/g, "\\n").replace(/"/g, '\\"');
}

function renderLabels(names: readonly string[], values: readonly string[], extra = ""): string {
  const parts = names.map((n, i) => `${n}="${escapeLabel(values[i])}"`);
  if (extra) parts.push(extra);
  return parts.length > 0 ? `{${parts.join(",")}}` : "";
}

function formatNumber(v: number): string {
  if (v === Number.POSITIVE_INFINITY) return "+Inf";
  if (v === Number.NEGATIVE_INFINITY) return "-Inf";
  if (Number.isNaN(v)) return "NaN";
  return String(v);
}

/** A metric that can render itself. */
interface Metric {
  readonly name: string;
  render(): string;
}

abstract class Labelled implements Metric {
  readonly name: string;
  readonly help: string;
  readonly labelNames: readonly string[];
  protected abstract readonly type: string;

  constructor(name: string, help: string, labelNames: readonly string[]) {
    this.name = name;
    this.help = help;
    this.labelNames = labelNames;
  }

  protected header(): string {
    return `# HELP ${this.name} ${
      this.help.replace(/\n/g, " ")
    }\n# TYPE ${this.name} ${this.type}\n`;
  }

  abstract render(): string;
}

/** A monotonically increasing counter. */
export class Counter extends Labelled {
  protected readonly type = "counter";
  #values = new Map<string, number>();

  /** Adds `by` (default 1). */
  inc(labels: Labels = {}, by = 1): void {
    if (by < 0) throw new Error("counters only go up");
    const key = labelKey(this.labelNames, labels);
    this.#values.set(key, (this.#values.get(key) ?? 0) + by);
  }

  /** The current value for `labels`. */
  get(labels: Labels = {}): number {
    return this.#values.get(labelKey(this.labelNames, labels)) ?? 0;
  }

  /** Text exposition. */
  render(): string {
    let out = this.header();
    for (const [key, v] of this.#values) {
      out += `${this.name}${renderLabels(this.labelNames, JSON.parse(key))} ${formatNumber(v)}\n`;
    }
    return out;
  }
}

/** A value that goes up and down. */
export class Gauge extends Labelled {
  protected readonly type = "gauge";
  #values = new Map<string, number>();

  /** Sets the value for `labels`. */
  set(labels: Labels, value: number): void {
    this.#values.set(labelKey(this.labelNames, labels), value);
  }

  /** The current value for `labels`, if set. */
  get(labels: Labels = {}): number | undefined {
    return this.#values.get(labelKey(this.labelNames, labels));
  }

  /** Drops every series whose labels include `match`. */
  deleteMatching(match: Labels): void {
    for (const key of [...this.#values.keys()]) {
      const values: string[] = JSON.parse(key);
      const hit = Object.entries(match).every(([k, v]) => values[this.labelNames.indexOf(k)] === v);
      if (hit) this.#values.delete(key);
    }
  }

  /** Text exposition. */
  render(): string {
    let out = this.header();
    for (const [key, v] of this.#values) {
      out += `${this.name}${renderLabels(this.labelNames, JSON.parse(key))} ${formatNumber(v)}\n`;
    }
    return out;
  }
}

/** A histogram with cumulative buckets. */
export class Histogram extends Labelled {
  protected readonly type = "histogram";
  readonly buckets: readonly number[];
  #series = new Map<string, { counts: number[]; sum: number; count: number }>();

  constructor(
    name: string,
    help: string,
    labelNames: readonly string[],
    buckets: readonly number[],
  ) {
    super(name, help, labelNames);
    this.buckets = [...buckets].sort((a, b) => a - b);
  }

  /** Records one observation. */
  observe(labels: Labels, value: number): void {
    const key = labelKey(this.labelNames, labels);
    let s = this.#series.get(key);
    if (!s) {
      s = { counts: this.buckets.map(() => 0), sum: 0, count: 0 };
      this.#series.set(key, s);
    }
    for (let i = 0; i < this.buckets.length; i++) {
      if (value <= this.buckets[i]) s.counts[i]++;
    }
    s.sum += value;
    s.count++;
  }

  /** Observation count for `labels`. */
  count(labels: Labels = {}): number {
    return this.#series.get(labelKey(this.labelNames, labels))?.count ?? 0;
  }

  /** Text exposition. */
  render(): string {
    let out = this.header();
    for (const [key, s] of this.#series) {
      const values: string[] = JSON.parse(key);
      this.buckets.forEach((b, i) => {
        out += `${this.name}_bucket${
          renderLabels(this.labelNames, values, `le="${formatNumber(b)}"`)
        } ${s.counts[i]}\n`;
      });
      out += `${this.name}_bucket${
        renderLabels(this.labelNames, values, 'le="+Inf"')
      } ${s.count}\n`;
      out += `${this.name}_sum${renderLabels(this.labelNames, values)} ${formatNumber(s.sum)}\n`;
      out += `${this.name}_count${renderLabels(this.labelNames, values)} ${s.count}\n`;
    }
    return out;
  }
}

/** A set of metrics rendered together. */
export class Registry {
  #metrics: Metric[] = [];

  /** Registers a counter. */
  counter(name: string, help: string, labelNames: readonly string[] = []): Counter {
    return this.#add(new Counter(name, help, labelNames));
  }

  /** Registers a gauge. */
  gauge(name: string, help: string, labelNames: readonly string[] = []): Gauge {
    return this.#add(new Gauge(name, help, labelNames));
  }

  /** Registers a histogram. */
  histogram(
    name: string,
    help: string,
    labelNames: readonly string[],
    buckets: readonly number[],
  ): Histogram {
    return this.#add(new Histogram(name, help, labelNames, buckets));
  }

  #add<M extends Metric>(metric: M): M {
    if (this.#metrics.some((m) => m.name === metric.name)) {
      throw new Error(`metric ${metric.name} registered twice`);
    }
    this.#metrics.push(metric);
    return metric;
  }

  /** The text exposition format (version 0.0.4). */
  render(): string {
    return this.#metrics.map((m) => m.render()).join("");
  }
}

/** Content type of {@linkcode Registry.render}. */
export const METRICS_CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8";

/** The controller's metrics. */
export class ControllerMetrics {
  readonly registry: Registry;
  /** Nodes of a pool per effective state. */
  readonly poolNodes: Gauge;
  /** Reboot slots in use per pool. */
  readonly slotsInUse: Gauge;
  /** Seconds from slot assignment to the end of the drain. */
  readonly drainDuration: Histogram;
  /** Seconds from slot assignment to the slot release (node updated and Ready). */
  readonly nodeUpdateDuration: Histogram;
  /** Failed reconciles. */
  readonly reconcileErrors: Counter;
  /** Reconcile latency. */
  readonly reconcileDuration: Histogram;
  /** API writes made by the reconciler, by kind. */
  readonly apiWrites: Counter;

  /** Registers the metrics on a new registry (or `registry`). */
  constructor(registry: Registry = new Registry()) {
    this.registry = registry;
    this.poolNodes = registry.gauge(
      "bootc_pool_nodes",
      "Nodes of a pool by effective state.",
      ["pool", "state"],
    );
    this.slotsInUse = registry.gauge("bootc_pool_slots_in_use", "Reboot slots in use.", ["pool"]);
    const long = [5, 15, 30, 60, 120, 300, 600, 1200, 1800, 3600, 7200];
    this.drainDuration = registry.histogram(
      "bootc_drain_duration_seconds",
      "Seconds from reboot slot assignment to the end of the node's drain.",
      ["pool"],
      long,
    );
    this.nodeUpdateDuration = registry.histogram(
      "bootc_node_update_duration_seconds",
      "Seconds from reboot slot assignment until the node runs the target and is Ready.",
      ["pool"],
      long,
    );
    this.reconcileErrors = registry.counter(
      "bootc_reconcile_errors_total",
      "Pool reconciles that failed.",
      ["pool"],
    );
    this.reconcileDuration = registry.histogram(
      "bootc_reconcile_duration_seconds",
      "Time taken by one pool reconcile.",
      ["pool"],
      [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
    );
    this.apiWrites = registry.counter(
      "bootc_api_writes_total",
      "Writes the reconciler made to the API server, by kind.",
      ["kind"],
    );
  }
}
