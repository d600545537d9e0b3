/* A stand-in for NVIDIA's libcuda.so.1 (none can be installed here): the three driver entry points trt_widget's
   backend detection and failure message use. Every call is appended to $TRT_WIDGET_FAKE_CUDA_LOG as
   "<function> <pid>", so a test can tell which process called what. cuDriverGetVersion reports
   $TRT_WIDGET_FAKE_CUDA_VERSION (e.g. 12040 = CUDA 12.4, the R550 driver), cuDeviceGetCount one device. */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static void note(const char *what) {
    const char *path = getenv("TRT_WIDGET_FAKE_CUDA_LOG");
    if (!path) return;
    FILE *f = fopen(path, "a");
    if (f) { fprintf(f, "%s %d\n", what, (int)getpid()); fclose(f); }
}

int cuInit(unsigned int flags) { (void)flags; note("cuInit"); return 0; }
int cuDeviceGetCount(int *count) { note("cuDeviceGetCount"); *count = 1; return 0; }
int cuDriverGetVersion(int *version) {
    const char *v = getenv("TRT_WIDGET_FAKE_CUDA_VERSION");
    note("cuDriverGetVersion");
    *version = v ? atoi(v) : 13000;
    return 0;
}
