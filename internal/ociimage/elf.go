package ociimage

import (
	"bytes"
	"debug/elf"
	"fmt"
)

// elfMachines maps GOARCH (OCI architecture) names to ELF machine types.
var elfMachines = map[string]elf.Machine{
	"amd64":   elf.EM_X86_64,
	"arm64":   elf.EM_AARCH64,
	"arm":     elf.EM_ARM,
	"386":     elf.EM_386,
	"ppc64le": elf.EM_PPC64,
	"s390x":   elf.EM_S390,
	"riscv64": elf.EM_RISCV,
}

// CheckStaticELF reports an error unless b is a static Linux ELF executable
// for architecture arch (GOARCH spelling): the right machine type and no
// program interpreter (PT_INTERP) or dynamic section, so it runs in an image
// FROM scratch.
func CheckStaticELF(b []byte, arch string) error {
	want, ok := elfMachines[arch]
	if !ok {
		return fmt.Errorf("architecture %q: no ELF machine type known for it", arch)
	}
	f, err := elf.NewFile(bytes.NewReader(b))
	if err != nil {
		return fmt.Errorf("not an ELF executable: %w", err)
	}
	defer f.Close()
	if f.Machine != want {
		return fmt.Errorf("ELF machine %s, want %s for %s", f.Machine, want, arch)
	}
	if f.Type != elf.ET_EXEC {
		return fmt.Errorf("ELF type %s, want a static executable (%s); build with CGO_ENABLED=0", f.Type, elf.ET_EXEC)
	}
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP || p.Type == elf.PT_DYNAMIC {
			return fmt.Errorf("ELF has %s: dynamically linked; build with CGO_ENABLED=0", p.Type)
		}
	}
	return nil
}
