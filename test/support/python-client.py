"""Drives a Slipway control plane with the official Python Kubernetes client (Debian's python3-kubernetes).

Usage: python3 python-client.py KUBECONFIG NAMESPACE
Prints one JSON object with what the client saw; the test asserts on it.
"""
import json
import sys
import threading
import time

from kubernetes import client, config, watch

kubeconfig, namespace = sys.argv[1], sys.argv[2]
api_client = config.new_client_from_config(config_file=kubeconfig)
core = client.CoreV1Api(api_client)
custom = client.CustomObjectsApi(api_client)
seen = {}

# A watch started before the changes sees each of them as an event (the client sends watch=True).
events = []
started = threading.Event()


def follow():
    w = watch.Watch()
    stream = w.stream(core.list_namespaced_config_map, namespace, label_selector="suite=python", timeout_seconds=20)
    started.set()
    for event in stream:
        events.append((event["type"], event["object"].metadata.name))
        if event["type"] == "DELETED" and event["object"].metadata.name == "py-0":
            w.stop()


thread = threading.Thread(target=follow)
thread.start()
started.wait()

for i in range(5):
    core.create_namespaced_config_map(
        namespace,
        client.V1ConfigMap(metadata=client.V1ObjectMeta(name=f"py-{i}", labels={"suite": "python", "even": str(i % 2 == 0).lower()}), data={"i": str(i)}),
    )
core.patch_namespaced_config_map("py-0", namespace, {"data": {"i": "changed"}})

# Pages: two at a time, each saying how many remain.
pages = []
page = core.list_namespaced_config_map(namespace, label_selector="suite=python", limit=2)
while True:
    pages.append({"names": [c.metadata.name for c in page.items], "remaining": page.metadata.remaining_item_count})
    if not page.metadata._continue:
        break
    page = core.list_namespaced_config_map(namespace, label_selector="suite=python", limit=2, _continue=page.metadata._continue)
seen["pages"] = pages
unfiltered = core.list_namespaced_config_map(namespace, limit=1)
seen["unfilteredRemaining"] = unfiltered.metadata.remaining_item_count
seen["unfilteredTotal"] = len(core.list_namespaced_config_map(namespace).items)

# Delete a collection by label.
deleted = core.delete_collection_namespaced_config_map(namespace, label_selector="even=false")
seen["deletedKind"] = deleted.kind
seen["left"] = sorted(c.metadata.name for c in core.list_namespaced_config_map(namespace, label_selector="suite=python").items)
core.delete_namespaced_config_map("py-0", namespace)
thread.join(timeout=20)
seen["events"] = events

# A dry run writes nothing; a foreground delete holds the object until its dependents are gone.
core.create_namespaced_config_map(namespace, client.V1ConfigMap(metadata=client.V1ObjectMeta(name="py-dry")), dry_run="All")
try:
    core.read_namespaced_config_map("py-dry", namespace)
    seen["dryRunStored"] = True
except client.exceptions.ApiException as e:
    seen["dryRunStored"] = e.status != 404
core.create_namespaced_config_map(namespace, client.V1ConfigMap(metadata=client.V1ObjectMeta(name="py-parent")))
core.delete_namespaced_config_map("py-parent", namespace, body=client.V1DeleteOptions(propagation_policy="Foreground"))
seen["foregroundGone"] = False
for _ in range(200):
    try:
        core.read_namespaced_config_map("py-parent", namespace)
        time.sleep(0.05)
    except client.exceptions.ApiException as e:
        seen["foregroundGone"] = e.status == 404
        break

# Slipway's own kinds through the generic client.
clusters = custom.list_namespaced_custom_object("slipway.dev", "v1alpha1", namespace, "clusters")
seen["clusters"] = [c["metadata"]["name"] for c in clusters["items"]]
try:
    core.read_namespaced_config_map("missing", namespace)
except client.exceptions.ApiException as e:
    seen["missing"] = {"status": e.status, "reason": json.loads(e.body)["reason"]}

print(json.dumps(seen))
