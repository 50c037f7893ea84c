package kube

import (
	"fmt"
	"path"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"
)

// ImageCopyPrefix starts the name of each Spec.ImageCopies init container.
const ImageCopyPrefix = "tether-copy-"

// ImageCopy is one of Spec.ImageCopies: an init container (named
// ImageCopyPrefix+Name) copies the directory Dir out of Image into the
// pod volume Volume (one of Spec.Volumes, typically an emptyDir) before
// the build container starts, so files of an image reach the job without
// passing through the API server. The copy is checked: a Dir that is not a
// directory, a failed copy or a copy that differs from Dir fails the init
// container, so the pod does not start, and its message names Image and
// Dir. Image needs /bin/sh and cp (diff, if present, checks the contents;
// without it the file names and sizes are compared). The init container
// runs under the same restricted security context as the shim's.
type ImageCopy struct {
	// Name tells the copies apart (a DNS label; the container is named
	// ImageCopyPrefix+Name).
	Name string
	// Image is the image the files come from.
	Image string
	// Dir is the absolute directory in Image whose contents are copied.
	Dir string
	// Volume is the pod volume (in Spec.Volumes) the contents land in.
	Volume string
	// Optional makes a Dir that Image does not have no error: the volume
	// stays empty (a failed copy of a Dir that exists still fails).
	Optional bool
}

// imageCopyMount is where an ImageCopy's init container mounts its volume.
const imageCopyMount = "/mnt/tether-copy"

// imageCopyScript copies $1 into $2 and checks the copy ($3 is the image,
// for the messages; $4 is "optional" for ImageCopy.Optional).
const imageCopyScript = `src=$1 dst=$2 img=$3 optional=$4
fail() { echo "tether: copying $src out of image $img: $1" >&2; exit 1; }
if [ ! -d "$src" ]; then
	if [ "$optional" = optional ]; then
		echo "tether: image $img has no directory $src: nothing copied"
		exit 0
	fi
	fail "$src is not a directory in the image"
fi
cp -R "$src"/. "$dst"/ || fail "cp failed (is the volume full?)"
if command -v diff >/dev/null 2>&1; then
	diff -r "$src" "$dst" >/dev/null || fail "the copy differs from the original (diff -r)"
else
	list() { (cd "$1" && find . -type f -exec wc -c {} + | sort); }
	[ "$(list "$src")" = "$(list "$dst")" ] || fail "the copy's files or sizes differ from the original"
fi
echo "tether: copied $src out of image $img"
`

// validateImageCopies checks Spec.ImageCopies.
func (s Spec) validateImageCopies() error {
	seen := map[string]bool{}
	for _, c := range s.ImageCopies {
		bad := func(why string) error { return fmt.Errorf("kube: image copy %q: %s", c.Name, why) }
		switch {
		case len(validation.IsDNS1123Label(ImageCopyPrefix+c.Name)) > 0:
			return bad("Name must make " + ImageCopyPrefix + "<Name> a DNS label")
		case seen[c.Name]:
			return bad("Name is used twice")
		case c.Image == "":
			return bad("Image is required")
		case !path.IsAbs(c.Dir) || path.Clean(c.Dir) != c.Dir:
			return bad("Dir must be a clean absolute path")
		case !slices.ContainsFunc(s.Volumes, func(v corev1.Volume) bool { return v.Name == c.Volume }):
			return bad(fmt.Sprintf("Volume %q names no volume in Spec.Volumes", c.Volume))
		}
		seen[c.Name] = true
	}
	return nil
}

// imageCopyContainer is c's init container.
func imageCopyContainer(c ImageCopy, pull corev1.PullPolicy, podSC *corev1.PodSecurityContext) corev1.Container {
	optional := "required"
	if c.Optional {
		optional = "optional"
	}
	return corev1.Container{
		Name:                     ImageCopyPrefix + c.Name,
		Image:                    c.Image,
		ImagePullPolicy:          pull,
		Command:                  []string{"/bin/sh", "-c", imageCopyScript, "sh", c.Dir, imageCopyMount, c.Image, optional},
		VolumeMounts:             []corev1.VolumeMount{{Name: c.Volume, MountPath: imageCopyMount}},
		TerminationMessagePolicy: corev1.TerminationMessageFallbackToLogsOnError,
		SecurityContext:          initSecurityContext(podSC),
	}
}

// imageCopyFailure explains a failed ImageCopies init container.
func imageCopyFailure(pod *corev1.Pod, c corev1.ContainerStatus) error {
	t := c.State.Terminated
	if t == nil || t.ExitCode == 0 || !strings.HasPrefix(c.Name, ImageCopyPrefix) {
		return nil
	}
	return initFailure(pod, c)
}

// initFailure is the *InitContainerError of pod's terminated init
// container c.
func initFailure(pod *corev1.Pod, c corev1.ContainerStatus) error {
	t := c.State.Terminated
	return &InitContainerError{Namespace: pod.Namespace, Pod: pod.Name, Container: c.Name, Image: c.Image,
		ExitCode: t.ExitCode, Reason: t.Reason, Message: strings.TrimSpace(t.Message)}
}
