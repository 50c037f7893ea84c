package settings

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/tether-ci/tether/client/kube"
)

// keyValues parses repeatable K=V flags, each checked by check.
func keyValues(flagName string, list []string, check func(k, v string) error) (map[string]string, error) {
	if len(list) == 0 {
		return nil, nil
	}
	m := map[string]string{}
	for _, kv := range list {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return nil, fmt.Errorf("%s %q: want KEY=VALUE", flagName, kv)
		}
		if err := check(k, v); err != nil {
			return nil, fmt.Errorf("%s %q: %w", flagName, kv, err)
		}
		m[k] = v
	}
	return m, nil
}

// checkAnnotation checks an annotation's key (any value is fine).
func checkAnnotation(k, _ string) error {
	if errs := validation.IsQualifiedName(strings.ToLower(k)); len(errs) > 0 {
		return fmt.Errorf("key %q: %s", k, strings.Join(errs, "; "))
	}
	return nil
}

// checkObjectName checks the name of a Kubernetes object a flag refers to
// (a Secret, a ServiceAccount, a PersistentVolumeClaim, a ConfigMap).
func checkObjectName(flagName, name string) error {
	if errs := validation.IsDNS1123Subdomain(name); len(errs) > 0 {
		return fmt.Errorf("%s %q is not a Kubernetes object name: %s", flagName, name, strings.Join(errs, "; "))
	}
	return nil
}

// parseToleration parses KEY[=VALUE][:EFFECT].
func parseToleration(s string) (corev1.Toleration, error) {
	var t corev1.Toleration
	kv, effect, hasEffect := strings.Cut(s, ":")
	key, value, hasValue := strings.Cut(kv, "=")
	if key == "" {
		return t, fmt.Errorf("--toleration %q: want KEY[=VALUE][:EFFECT]", s)
	}
	t.Key = key
	t.Operator = corev1.TolerationOpExists
	if hasValue {
		t.Operator, t.Value = corev1.TolerationOpEqual, value
	}
	if hasEffect {
		switch e := corev1.TaintEffect(effect); e {
		case corev1.TaintEffectNoSchedule, corev1.TaintEffectPreferNoSchedule, corev1.TaintEffectNoExecute:
			t.Effect = e
		default:
			return t, fmt.Errorf("--toleration %q: effect %q is not NoSchedule, PreferNoSchedule or NoExecute", s, effect)
		}
	}
	if err := kube.CheckToleration(t); err != nil {
		return t, fmt.Errorf("--toleration %q: %w", s, err)
	}
	return t, nil
}
