// A CT phase's voxels in the tab, streamed: the slice shown first (alone), then chunks of
// slices around it, within a memory budget per phase (see docs/ct.md).

// Django's JavaScript catalog (base.html) defines gettext and interpolate before any module runs.
const { gettext, interpolate } = globalThis;

// Voxels kept per phase: the chunks nearest the slice shown, up to this many bytes (48 MiB is
// 96 slices of 512×512); farther chunks are dropped and fetched again (HTTP-cached) when needed.
export const PHASE_BUDGET_BYTES = 48 * 1024 * 1024;
const SINGLE_SLICES_KEPT = 8; // slices fetched alone while their chunk is still on its way

async function fetchVoxels(url, expected) {
  // The body arrives inflated (Content-Encoding: gzip).
  const response = await fetch(url, { credentials: "same-origin" });
  if (!response.ok) throw new Error(interpolate(gettext("The volume could not be loaded (HTTP %(status)s)."), { status: response.status }, true));
  const buffer = await response.arrayBuffer();
  if (buffer.byteLength !== expected) {
    throw new Error(interpolate(gettext("The volume arrived incomplete: %(received)s of %(expected)s bytes."), { received: buffer.byteLength, expected }, true));
  }
  return new Int16Array(buffer);
}

// One phase's voxels in the tab: chunks of consecutive slices (Int16Array) nearest the slice
// shown, within PHASE_BUDGET_BYTES, streamed one at a time nearest first; a slice not yet in
// memory is fetched alone so that scrolling never waits for a chunk.
export class VoxelStore {
  constructor(viewport, volume) {
    this.viewport = viewport;
    this.volume = volume;
    [this.nz, this.ny, this.nx] = volume.shape;
    this.sliceSize = this.nx * this.ny;
    this.chunkSlices = volume.chunkSlices;
    this.chunkCount = Math.ceil(this.nz / this.chunkSlices);
    const chunkBytes = this.chunkSlices * this.sliceSize * 2;
    this.maxChunks = Math.max(1, Math.floor(PHASE_BUDGET_BYTES / chunkBytes));
    this.chunks = new Map(); // chunk index → Int16Array of its slices
    this.singles = new Map(); // z → Int16Array, most recent last
    this.loadingChunk = null;
    this.loadingSlice = null;
    this.wantedZ = null;
    this.error = null;
    this.received = { chunks: 0, bytes: 0 };
    this.waiters = [];
  }

  slice(z) {
    const chunk = this.chunks.get(Math.floor(z / this.chunkSlices));
    if (chunk) {
      const offset = (z % this.chunkSlices) * this.sliceSize;
      return chunk.subarray(offset, offset + this.sliceSize);
    }
    return this.singles.get(z) || null;
  }

  residentBytes() {
    let bytes = 0;
    for (const chunk of this.chunks.values()) bytes += chunk.byteLength;
    for (const slice of this.singles.values()) bytes += slice.byteLength;
    return bytes;
  }

  // The chunks to hold for the slice shown: its own, then alternately after and before it.
  plan() {
    const centre = Math.floor(this.viewport.z / this.chunkSlices);
    const wanted = [centre];
    for (let step = 1; wanted.length < Math.min(this.maxChunks, this.chunkCount); step++) {
      if (centre + step < this.chunkCount) wanted.push(centre + step);
      if (centre - step >= 0 && wanted.length < this.maxChunks) wanted.push(centre - step);
    }
    return wanted;
  }

  // Show slice z as soon as possible: from memory, or fetched alone (the latest wish wins).
  async want(z) {
    this.wantedZ = z;
    if (this.slice(z)) {
      this.wantedZ = null;
      return this.pump();
    }
    if (this.loadingSlice !== null) return; // the loop below takes the latest wish next
    while (this.wantedZ !== null && !this.slice(this.wantedZ) && !this.error) {
      const target = this.wantedZ;
      this.loadingSlice = target;
      try {
        const slice = await fetchVoxels(this.volume.slice16Url.replace("{z}", target), this.sliceSize * 2);
        this.singles.delete(target);
        this.singles.set(target, slice);
        while (this.singles.size > SINGLE_SLICES_KEPT) this.singles.delete(this.singles.keys().next().value);
      } catch (error) {
        this.fail(error);
      } finally {
        this.loadingSlice = null;
      }
      if (this.viewport.z === target && !this.error) this.viewport.render();
    }
    this.wantedZ = null;
    return this.pump();
  }

  // Fetch the nearest missing chunk of the plan, one at a time, until the plan is in memory.
  async pump() {
    if (this.loadingChunk !== null || this.error || this.loadingSlice !== null) return;
    const wanted = this.plan();
    this.evict(wanted);
    const next = wanted.find((index) => !this.chunks.has(index));
    if (next === undefined) {
      this.viewport.showProgress("");
      this.waiters.splice(0).forEach((resolve) => resolve());
      return;
    }
    this.loadingChunk = next;
    const held = wanted.filter((index) => this.chunks.has(index)).length;
    this.viewport.showProgress(interpolate(gettext("Loading %(percent)s"), { percent: `${Math.round((100 * held) / wanted.length)}%` }, true));
    const slices = Math.min(this.chunkSlices, this.nz - next * this.chunkSlices);
    try {
      const chunk = await fetchVoxels(this.volume.chunkUrl.replace("{i}", next), slices * this.sliceSize * 2);
      this.received.chunks += 1;
      this.received.bytes += chunk.byteLength;
      if (this.plan().includes(next)) this.chunks.set(next, chunk);
      for (const z of [...this.singles.keys()]) if (this.chunks.has(Math.floor(z / this.chunkSlices))) this.singles.delete(z);
      const shown = Math.floor(this.viewport.z / this.chunkSlices);
      if (next === shown && this.viewport.paintedZ !== this.viewport.z) this.viewport.render();
    } catch (error) {
      this.fail(error);
      return;
    } finally {
      this.loadingChunk = null;
    }
    this.pump();
  }

  evict(wanted) {
    for (const index of [...this.chunks.keys()]) if (!wanted.includes(index)) this.chunks.delete(index);
  }

  fail(error) {
    this.error = error;
    this.viewport.showProgress(String(error.message || error));
    this.waiters.splice(0).forEach((resolve) => resolve());
  }

  // Resolves once the plan around the slice shown is in memory (or loading failed).
  streamed() {
    return new Promise((resolve) => {
      this.waiters.push(resolve);
      this.pump();
    });
  }
}
