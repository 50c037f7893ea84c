# shellcheck shell=bash
# configs.sh — config files of the e2e node's containerd, CNI and kubelet.
# Source after common.sh.

# overlay_works DIR: can overlayfs mount with upper/work dirs under DIR?
overlay_works() {
  local t
  t=$(mktemp -d "$1/.overlay-probe.XXXXXX")
  mkdir -p "$t/l" "$t/u" "$t/w" "$t/m"
  if mount -t overlay overlay -o "lowerdir=$t/l,upperdir=$t/u,workdir=$t/w" "$t/m" 2>/dev/null; then
    umount "$t/m"
    rm -rf "$t"
    return 0
  fi
  rm -rf "$t"
  return 1
}

# write_containerd_config: CTRD_DIR/config.toml; prints the snapshotter.
write_containerd_config() {
  local snap=overlayfs
  mkdir -p "$CTRD_DIR/root" "$CTRD_DIR/state" "$CTRD_DIR/opt"
  overlay_works "$CTRD_DIR" || snap=native
  cat >"$CTRD_DIR/config.toml" <<EOF
# e2e node containerd (scripts/e2e-cluster-up.sh). Own dirs and socket.
version = 2
root = "$CTRD_DIR/root"
state = "$CTRD_DIR/state"
disabled_plugins = ["io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.zfs", "io.containerd.snapshotter.v1.aufs", "io.containerd.snapshotter.v1.devmapper"]

[grpc]
  address = "$CTRD_SOCK"

[plugins]
  [plugins."io.containerd.internal.v1.opt"]
    path = "$CTRD_DIR/opt"
  [plugins."io.containerd.grpc.v1.cri"]
    sandbox_image = "$SANDBOX_IMAGE"
    # These VMs lack CAP_SYS_RESOURCE: without this every sandbox fails
    # ("can't get final child's PID from pipe").
    restrict_oom_score_adj = true
    stream_server_address = "127.0.0.1"
    stream_server_port = "0"
    enable_selinux = false
    # Pod network namespaces under the state dir: teardown finds them there.
    netns_mounts_under_state_dir = true
    [plugins."io.containerd.grpc.v1.cri".cni]
      bin_dir = "/usr/lib/cni"
      conf_dir = "$CNI_CONF_DIR"
      max_conf_num = 1
    [plugins."io.containerd.grpc.v1.cri".containerd]
      snapshotter = "$snap"
      default_runtime_name = "runc"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
        runtime_type = "io.containerd.runc.v2"
        [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
          SystemdCgroup = false
EOF
  echo "$snap"
}

# write_cni_config: a bridge network without a gateway or masquerading, so
# pods reach each other and nothing else. The node needs a CNI config even
# when every pod uses hostNetwork, or it stays NotReady.
write_cni_config() {
  mkdir -p "$CNI_CONF_DIR" "$E2E_DIR/cni/ipam"
  cat >"$CNI_CONF_DIR/10-tether-e2e.conflist" <<EOF
{
  "cniVersion": "0.4.0",
  "name": "tether-e2e",
  "plugins": [
    {
      "type": "bridge",
      "bridge": "$BRIDGE",
      "isGateway": false,
      "ipMasq": false,
      "hairpinMode": false,
      "ipam": {
        "type": "host-local",
        "dataDir": "$E2E_DIR/cni/ipam",
        "ranges": [[{"subnet": "$POD_SUBNET"}]]
      }
    }
  ]
}
EOF
}

# write_kubelet_config: KUBELET_DIR/config.yaml.
write_kubelet_config() {
  mkdir -p "$KUBELET_DIR" "$POD_LOGS"
  cat >"$E2E_DIR/kubelet.yaml" <<EOF
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
address: 127.0.0.1
port: 10250
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
healthzPort: 10248
authentication:
  anonymous:
    enabled: false
  webhook:
    enabled: true
  x509:
    clientCAFile: $PKI/ca.crt
authorization:
  mode: Webhook
tlsCertFile: $PKI/kubelet-server.crt
tlsPrivateKeyFile: $PKI/kubelet-server.key
cgroupDriver: cgroupfs
containerRuntimeEndpoint: unix://$CTRD_SOCK
failSwapOn: false
podLogsDir: $POD_LOGS
clusterDomain: cluster.local
resolvConf: /etc/resolv.conf
serializeImagePulls: false
maxPods: 110
# A nearly full CI disk must not evict pods or the local-only images.
evictionHard:
  memory.available: 100Mi
  nodefs.available: 1%
  nodefs.inodesFree: 1%
  imagefs.available: 1%
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
EOF
}

# The API server's audit trail (Metadata level: who did what to which
# resource, with its User-Agent; no bodies), for counting the requests a
# job makes (bench/: the GitLab request count). The node's own components
# (kubelet, controllers, scheduler, the apiserver itself) are left out:
# the log holds what clients asked.
AUDIT_POLICY="$E2E_DIR/audit-policy.yaml"
AUDIT_LOG="$LOGS/audit.log"

# write_audit_policy: the audit policy file.
write_audit_policy() {
  cat >"$AUDIT_POLICY" <<'POLICY'
apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: [RequestReceived]
rules:
- level: None
  userGroups: ["system:nodes", "system:serviceaccounts:kube-system"]
- level: None
  users: ["system:kube-controller-manager", "system:kube-scheduler", "system:apiserver"]
- level: None
  nonResourceURLs: ["/readyz*", "/healthz*", "/livez*", "/version"]
- level: Metadata
POLICY
}
