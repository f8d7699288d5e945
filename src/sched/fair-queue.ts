/**
 * A queue that is fair across keys: items come out round-robin over the keys that have any, in
 * arrival order within a key. One key's backlog of a thousand items delays another key's single
 * item by at most one item per other key. The sandbox's limiter and the Node server's
 * environment threads both queue through it.
 */
export class FairQueue<T> {
  private readonly byKey = new Map<string, T[]>();
  /** Keys with items, in the order they are served; a served key goes to the back. */
  private readonly order: string[] = [];
  private count = 0;

  get size(): number {
    return this.count;
  }

  /** Items queued under `key`. */
  sizeOf(key: string): number {
    return this.byKey.get(key)?.length ?? 0;
  }

  push(key: string, item: T): void {
    this.add(key, item, false);
  }

  /** Put an item at the front of its key, and its key at the front of the round (a retry). */
  unshift(key: string, item: T): void {
    this.add(key, item, true);
  }

  shift(): T | undefined {
    const key = this.order.shift();
    if (key === undefined) return undefined;
    const items = this.byKey.get(key)!;
    const item = items.shift()!;
    this.count--;
    if (items.length > 0) this.order.push(key);
    else this.byKey.delete(key);
    return item;
  }

  /**
   * Like shift(), but only from a key whose first item `ready` accepts: keys passed over keep their
   * place in the round (they come first once ready). Undefined when no key is ready.
   */
  shiftReady(ready: (item: T) => boolean): T | undefined {
    for (let i = 0; i < this.order.length; i++) {
      const key = this.order[i]!;
      const items = this.byKey.get(key)!;
      if (!ready(items[0]!)) continue;
      this.order.splice(i, 1);
      const item = items.shift()!;
      this.count--;
      if (items.length > 0) this.order.push(key);
      else this.byKey.delete(key);
      return item;
    }
    return undefined;
  }

  /** Drop a queued item (its caller gave up); false when it was not queued. */
  remove(key: string, item: T): boolean {
    const items = this.byKey.get(key);
    const i = items?.indexOf(item) ?? -1;
    if (!items || i < 0) return false;
    items.splice(i, 1);
    this.count--;
    if (items.length === 0) {
      this.byKey.delete(key);
      this.order.splice(this.order.indexOf(key), 1);
    }
    return true;
  }

  private add(key: string, item: T, front: boolean): void {
    let items = this.byKey.get(key);
    if (!items) {
      items = [];
      this.byKey.set(key, items);
      if (front) this.order.unshift(key);
      else this.order.push(key);
    }
    if (front) items.unshift(item);
    else items.push(item);
    this.count++;
  }
}

/**
 * Fairness in two levels: groups (clients) take turns, and within a group its keys (the client's
 * episodes) take turns, FIFO within a key. A group with ten keys gets no more turns than a group
 * with one: opening more episodes does not buy a client a larger part of what is shared. A key
 * given as its own group makes this the one-level FairQueue.
 */
export class GroupedFairQueue<T> {
  private readonly groups = new Map<string, FairQueue<T>>();
  /** Groups with items, in the order they are served; a served group goes to the back. */
  private readonly order: string[] = [];
  private count = 0;

  get size(): number {
    return this.count;
  }

  /** Items queued under `key` (in any group). */
  sizeOf(key: string): number {
    let n = 0;
    for (const queue of this.groups.values()) n += queue.sizeOf(key);
    return n;
  }

  push(group: string, key: string, item: T): void {
    let queue = this.groups.get(group);
    if (!queue) {
      this.groups.set(group, (queue = new FairQueue<T>()));
      this.order.push(group);
    }
    queue.push(key, item);
    this.count++;
  }

  shift(): T | undefined {
    const group = this.order.shift();
    if (group === undefined) return undefined;
    const queue = this.groups.get(group)!;
    const item = queue.shift()!;
    this.count--;
    if (queue.size > 0) this.order.push(group);
    else this.groups.delete(group);
    return item;
  }

  /** Drop a queued item (its caller gave up); false when it was not queued. */
  remove(group: string, key: string, item: T): boolean {
    const queue = this.groups.get(group);
    if (!queue?.remove(key, item)) return false;
    this.count--;
    if (queue.size === 0) {
      this.groups.delete(group);
      this.order.splice(this.order.indexOf(group), 1);
    }
    return true;
  }
}
