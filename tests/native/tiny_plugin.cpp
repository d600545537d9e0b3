// The smallest TensorRT plugin library: one IPluginCreatorV3One, "TrtWidgetTiny" version "1", that creates nothing.
// Self-contained (no TensorRT headers or CUDA toolkit here): the classes below repeat the virtual functions of
// NVIDIA's nvinfer1::IVersionedInterface / IPluginCreatorInterface / IPluginCreatorV3One in header order
// (include/NvInferRuntimeBase.h, NvInferPluginBase.h, NvInferRuntime.h of github.com/NVIDIA/TensorRT), which fixes
// the vtable TensorRT calls. Loading appends this process's id to "<this library's path>.pids".
#include <dlfcn.h>

#include <cstdint>
#include <cstdio>
#include <unistd.h>

namespace nvinfer1 {
struct InterfaceInfo { char const* kind; int32_t major; int32_t minor; };
enum class APILanguage : int32_t { kCPP = 0, kPYTHON = 1 };
enum class TensorRTPhase : int32_t { kBUILD = 0, kRUNTIME = 1 };
struct PluginField;
struct PluginFieldCollection { int32_t nbFields{}; PluginField const* fields{}; };
class IPluginV3;
class ILoggerFinder;

class IVersionedInterface {
public:
    virtual APILanguage getAPILanguage() const noexcept { return APILanguage::kCPP; }
    virtual InterfaceInfo getInterfaceInfo() const noexcept = 0;
    virtual ~IVersionedInterface() noexcept = default;
};
class IPluginCreatorInterface : public IVersionedInterface {};
class IPluginCreatorV3One : public IPluginCreatorInterface {
public:
    InterfaceInfo getInterfaceInfo() const noexcept override { return InterfaceInfo{"PLUGIN CREATOR_V3ONE", 1, 0}; }
    virtual IPluginV3* createPlugin(char const* name, PluginFieldCollection const* fc, TensorRTPhase phase) noexcept = 0;
    virtual PluginFieldCollection const* getFieldNames() noexcept = 0;
    virtual char const* getPluginName() const noexcept = 0;
    virtual char const* getPluginVersion() const noexcept = 0;
    virtual char const* getPluginNamespace() const noexcept = 0;
};
}  // namespace nvinfer1

using namespace nvinfer1;

namespace {
class TinyCreator : public IPluginCreatorV3One {
public:
    IPluginV3* createPlugin(char const*, PluginFieldCollection const*, TensorRTPhase) noexcept override { return nullptr; }
    PluginFieldCollection const* getFieldNames() noexcept override { return &fields_; }
    char const* getPluginName() const noexcept override { return "TrtWidgetTiny"; }
    char const* getPluginVersion() const noexcept override { return "1"; }
    char const* getPluginNamespace() const noexcept override { return ""; }

private:
    PluginFieldCollection fields_{};
};

TinyCreator creator;
IPluginCreatorInterface* creators[] = {&creator};

__attribute__((constructor)) void loaded() {
    Dl_info self{};
    if (dladdr(reinterpret_cast<void*>(&loaded), &self) == 0 || self.dli_fname == nullptr) return;
    char mark[4096];
    std::snprintf(mark, sizeof mark, "%s.pids", self.dli_fname);
    if (FILE* f = std::fopen(mark, "a")) {
        std::fprintf(f, "%d\n", static_cast<int>(getpid()));
        std::fclose(f);
    }
}
}  // namespace

extern "C" void setLoggerFinder(ILoggerFinder*) {}
extern "C" IPluginCreatorInterface* const* getCreators(int32_t& nbCreators) {
    nbCreators = 1;
    return creators;
}
