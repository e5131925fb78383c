// What the sim cloud offers: regions and zones, machine types with prices, and images. Static data; image
// ids are derived from region and name so they are the same in every run and every seed.
import { createHash } from "node:crypto";
import { InvalidParameterError } from "./errors.ts";
import type { Image, MachineType, Region, RegionPrices, Zone } from "./types.ts";

interface RegionEntry extends Omit<Region, "prices" | "expectedDurationsMs"> {
  /** Price multiplier relative to the cheapest region. */
  priceFactor: number;
  /** Machine-type families offered here. */
  families: MachineType["family"][];
}

const REGIONS: RegionEntry[] = [
  {
    name: "sim-east-1",
    displayName: "Sim East 1",
    zones: ["sim-east-1a", "sim-east-1b", "sim-east-1c"],
    priceFactor: 1,
    families: ["general", "memory"],
  },
  {
    name: "sim-west-1",
    displayName: "Sim West 1",
    zones: ["sim-west-1a", "sim-west-1b"],
    priceFactor: 1.08,
    families: ["general", "memory"],
  },
  {
    name: "sim-central-1",
    displayName: "Sim Central 1",
    zones: ["sim-central-1a", "sim-central-1b", "sim-central-1c"],
    priceFactor: 1.12,
    families: ["general"],
  },
];

// Prices of the other billed resources, per hour, in the cheapest region: a load balancer as public
// clouds bill a network load balancer's hour, a public address as they bill an IPv4 address in use.
const BASE_PRICES: RegionPrices = { loadBalancerHourly: 0.0225, publicIpHourly: 0.005 };

// Base prices follow the shape of public on-demand price lists (general purpose ≈ $0.04 per vCPU-hour,
// memory optimised ≈ $0.06), not any one provider's figures.
const MACHINE_TYPES: MachineType[] = [
  { name: "s1.small", family: "general", vcpus: 1, memoryMiB: 2048, hourlyPrice: 0.0208 },
  { name: "s1.medium", family: "general", vcpus: 2, memoryMiB: 4096, hourlyPrice: 0.0416 },
  { name: "s1.large", family: "general", vcpus: 4, memoryMiB: 8192, hourlyPrice: 0.0832 },
  { name: "s1.xlarge", family: "general", vcpus: 8, memoryMiB: 32768, hourlyPrice: 0.2496 },
  { name: "s1.2xlarge", family: "general", vcpus: 16, memoryMiB: 65536, hourlyPrice: 0.768 },
  { name: "m1.large", family: "memory", vcpus: 2, memoryMiB: 16384, hourlyPrice: 0.126 },
  { name: "m1.xlarge", family: "memory", vcpus: 4, memoryMiB: 32768, hourlyPrice: 0.252 },
];

interface ImageRelease {
  name: string;
  version: string;
  /** Node software baked into the image, as Cluster API's image builder makes them. */
  kubernetes?: Image["kubernetes"];
}

// Plain Ubuntu cloud images carry no container runtime and no Kubernetes: user data must install them.
const IMAGE_RELEASES: ImageRelease[] = [
  { name: "ubuntu-22.04", version: "22.04" },
  { name: "ubuntu-24.04", version: "24.04" },
  { name: "ubuntu-22.04-kube-v1.31.2", version: "22.04", kubernetes: { version: "v1.31.2", containerRuntime: "containerd://1.7.22" } },
];

function regionEntry(region: string): RegionEntry {
  const entry = REGIONS.find((r) => r.name === region);
  if (!entry) {
    throw new InvalidParameterError(`unknown region "${region}" (known: ${REGIONS.map((r) => r.name).join(", ")})`, {
      details: { field: "region" },
    });
  }
  return entry;
}

/** Throws InvalidParameter unless `region` exists. */
export function checkRegion(region: string): void {
  regionEntry(region);
}

export function regions(): Region[] {
  return REGIONS.map(({ name, displayName, zones, priceFactor }) => ({ name, displayName, zones: [...zones], prices: pricesIn(priceFactor) }));
}

function pricesIn(priceFactor: number): RegionPrices {
  const scaled = (price: number) => Math.round(price * priceFactor * 10_000) / 10_000;
  return { loadBalancerHourly: scaled(BASE_PRICES.loadBalancerHourly), publicIpHourly: scaled(BASE_PRICES.publicIpHourly) };
}

export function zonesOf(region: string): Zone[] {
  return regionEntry(region).zones.map((name) => ({ name, region, state: "available" as const }));
}

export function machineTypesOf(region: string): MachineType[] {
  const entry = regionEntry(region);
  return MACHINE_TYPES.filter((t) => entry.families.includes(t.family)).map((t) => ({
    ...t,
    hourlyPrice: Math.round(t.hourlyPrice * entry.priceFactor * 10_000) / 10_000,
  }));
}

/** The machine type offered in the region under that name, or InvalidParameter. */
export function machineType(region: string, name: string): MachineType {
  const found = machineTypesOf(region).find((t) => t.name === name);
  if (!found) throw new InvalidParameterError(`machine type "${name}" is not offered in ${region}`, { details: { field: "machineType" } });
  return found;
}

function imageId(region: string, name: string): string {
  return "img-" + createHash("sha256").update(`${region}/${name}`).digest("hex").slice(0, 17);
}

export function imagesOf(region: string): Image[] {
  regionEntry(region);
  return IMAGE_RELEASES.map((release) => ({
    id: imageId(region, release.name),
    name: release.name,
    region,
    os: "ubuntu" as const,
    version: release.version,
    architecture: "x86_64" as const,
    ...(release.kubernetes ? { kubernetes: { ...release.kubernetes } } : {}),
  }));
}

/** The image with that id in the region, or InvalidParameter (ids of other regions are not found). */
export function image(region: string, id: string): Image {
  const found = imagesOf(region).find((i) => i.id === id);
  if (!found) throw new InvalidParameterError(`image "${id}" does not exist in ${region}`, { details: { field: "imageId" } });
  return found;
}

/** Throws InvalidParameter unless `zone` belongs to `region`. */
export function checkZone(region: string, zone: string): void {
  if (!regionEntry(region).zones.includes(zone)) {
    throw new InvalidParameterError(`zone "${zone}" is not in ${region}`, { details: { field: "zone" } });
  }
}
