package contract_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/tether-ci/tether/internal/contract"
)

// Every contract string is written once, in this package: no other non-test
// Go file of the module spells one of them as a string literal (the cleaner
// deletes by these strings, so a second copy that drifts leaks objects).
func TestContractStringsAreDefinedOnce(t *testing.T) {
	values := map[string]string{
		contract.LabelManagedBy:      "LabelManagedBy",
		contract.LabelJob:            "LabelJob",
		contract.AnnotationTTL:       "AnnotationTTL",
		contract.ShimImageRepository: "ShimImageRepository",
		contract.CLIImageRepository:  "CLIImageRepository",
		contract.LabelPool:           "LabelPool",
		contract.LabelPoolHash:       "LabelPoolHash",
		contract.LabelWarm:           "LabelWarm",
		contract.AnnotationClaimedAt: "AnnotationClaimedAt",
	}
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Fatalf("module root not found above the package: %v", err)
	}
	self, err := filepath.Abs(".")
	if err != nil {
		t.Fatal(err)
	}
	files := 0
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if n := d.Name(); path != root && (strings.HasPrefix(n, ".") || n == "bin" || n == "testdata") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") || filepath.Dir(path) == self {
			return nil
		}
		files++
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		ast.Inspect(f, func(n ast.Node) bool {
			lit, ok := n.(*ast.BasicLit)
			if !ok || lit.Kind != token.STRING {
				return true
			}
			s, err := strconv.Unquote(lit.Value)
			if err != nil {
				return true
			}
			for v, name := range values {
				if strings.Contains(s, v) {
					rel, _ := filepath.Rel(root, path)
					t.Errorf("%s spells %q; use contract.%s", rel, v, name)
				}
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if files < 50 {
		t.Fatalf("walked only %d Go files under %s; the walk is broken", files, root)
	}
}

func TestImageTag(t *testing.T) {
	for v, want := range map[string]string{
		"v1.2.3":                  "v1.2.3",
		"v0.1.0-rc.1":             "v0.1.0-rc.1",
		"v10.0.0":                 "v10.0.0",
		"dev":                     contract.DevImageTag,
		"":                        contract.DevImageTag,
		"9dcbf13-dirty":           contract.DevImageTag,
		"v1.2.3-dirty":            contract.DevImageTag,
		"v1.2.3-4-g9dcbf13":       contract.DevImageTag,
		"v1.2.3-4-g9dcbf13-dirty": contract.DevImageTag,
		"1.2.3":                   contract.DevImageTag,
		"v1.2":                    contract.DevImageTag,
		"v01.2.3":                 contract.DevImageTag,
		"v1.2.3-":                 contract.DevImageTag,
		"v1.2.3-rc_1":             contract.DevImageTag,
		"v1.2.3.4":                contract.DevImageTag,
		"v1.x.3":                  contract.DevImageTag,
		"v1.2.3-4-gabc1234-dirty": contract.DevImageTag,
		"v1.2.3-beta-2":           "v1.2.3-beta-2",
	} {
		if got := contract.ImageTag(v); got != want {
			t.Errorf("ImageTag(%q) = %q, want %q", v, got, want)
		}
	}
	// Plain `go build` leaves the version "dev".
	if got, want := contract.DefaultHelperImage(), contract.ShimImageRepository+":"+contract.DevImageTag; got != want {
		t.Errorf("DefaultHelperImage() = %q, want %q", got, want)
	}
}
