package docker_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// The package's exported API is what a runner needs to run jobs in
// containers; the Docker Engine API client behind it is internal, so it is
// no compatibility promise.
func TestPublicAPIIsRunnerFacing(t *testing.T) {
	allowed := []string{
		// run jobs
		"Client", "NewClient", "Spec", "Script", "Container", "Ulimit", "ScriptPath",
		// engine address and errors
		"APIVersion", "DefaultHost", "ErrNoEngine",
		// contract strings and paths inside the container
		"LabelManagedBy", "ManagedByValue", "LabelJob", "DefaultHelperImage", "ShimEnvPrefix",
		"Dir", "ShimPath", "ScriptDir", "CommandsPath", "SpoolDir",
	}
	names, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	var extra []string
	for _, name := range names {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(token.NewFileSet(), name, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			switch d := d.(type) {
			case *ast.FuncDecl:
				if d.Recv == nil && d.Name.IsExported() && !slices.Contains(allowed, d.Name.Name) {
					extra = append(extra, d.Name.Name)
				}
			case *ast.GenDecl:
				for _, s := range d.Specs {
					switch s := s.(type) {
					case *ast.TypeSpec:
						if s.Name.IsExported() && !slices.Contains(allowed, s.Name.Name) {
							extra = append(extra, s.Name.Name)
						}
					case *ast.ValueSpec:
						for _, n := range s.Names {
							if n.IsExported() && !slices.Contains(allowed, n.Name) {
								extra = append(extra, n.Name)
							}
						}
					}
				}
			}
		}
	}
	if len(extra) > 0 {
		t.Fatalf("client/docker exports %v beyond what a runner needs; keep engine API details in internal/dockerengine", extra)
	}
}
