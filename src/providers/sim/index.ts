// The `sim` provider's factory: opens a Connection against the sim cloud, over HTTP or, when the cloud
// runs in the same process and the Connection names no endpoint, in-process.
import { SimCloudClient } from "../../simcloud/client.ts";
import { DEFAULT_TOKEN } from "../../simcloud/cloud.ts";
import { UnauthorizedError } from "../../simcloud/errors.ts";
import { DEFAULT_PORT } from "../../simcloud/server.ts";
import type { CloudApi } from "../../simcloud/types.ts";
import type { ConnectionTarget, ProviderFactory } from "../provider.ts";
import { SimProvider } from "./provider.ts";

export { SimProvider, loadBalancerName } from "./provider.ts";
export { simProviderId } from "./views.ts";

export const SIM_DEFAULT_ENDPOINT = `http://127.0.0.1:${DEFAULT_PORT}`;

/** A sim cloud in the same process. `SimCloud` also resolves tokens to accounts, as its HTTP API does. */
export interface EmbeddedSimCloud extends CloudApi {
  authenticate?(token: string): string | undefined;
  forAccount?(account: string): CloudApi;
}

export interface SimProviderOptions {
  /** The sim cloud's URL when a Connection names none (default http://127.0.0.1:7480). */
  endpoint?: string;
  /** Bearer token when a Connection's credentials carry none (default the sim's default account). */
  token?: string;
  /** The sim cloud embedded in this process, used for Connections that name no endpoint. */
  cloud?: EmbeddedSimCloud;
  /** Per-request timeout over HTTP (default 30 s). */
  timeoutMs?: number;
}

/** A cloud API whose every call is refused, as the HTTP API refuses an unknown token. */
function refusingCloud(message: string): CloudApi {
  return new Proxy({} as CloudApi, {
    get: () => () => Promise.reject(new UnauthorizedError(message)),
  });
}

/** The account the Connection's token names in an embedded cloud (the cloud as given when it cannot tell). */
function embeddedAccount(cloud: EmbeddedSimCloud, token: string | undefined): CloudApi {
  if (token === undefined || !cloud.authenticate || !cloud.forAccount) return cloud;
  const account = cloud.authenticate(token);
  return account === undefined ? refusingCloud("the credentials' token is not valid for the sim cloud") : cloud.forAccount(account);
}

export interface SimProviderFactory extends ProviderFactory {
  open(target: ConnectionTarget): SimProvider;
}

/**
 * The `sim` provider. A Connection's `spec.endpoint` overrides the default endpoint and its credentials
 * Secret's `token` key overrides the default token. Installed in `../index.ts`.
 */
export function simProviderFactory(options: SimProviderOptions = {}): SimProviderFactory {
  return {
    name: "sim",
    open(target: ConnectionTarget): SimProvider {
      const credentialToken = target.credentials?.token;
      if (target.endpoint === undefined && options.cloud) {
        return new SimProvider(embeddedAccount(options.cloud, credentialToken ?? options.token), target.region, target.name);
      }
      const endpoint = target.endpoint ?? options.endpoint ?? SIM_DEFAULT_ENDPOINT;
      const client = new SimCloudClient({
        endpoint,
        token: credentialToken ?? options.token ?? DEFAULT_TOKEN,
        ...(options.timeoutMs === undefined ? {} : { timeoutMs: options.timeoutMs }),
      });
      return new SimProvider(client, target.region, target.name, endpoint);
    },
  };
}
