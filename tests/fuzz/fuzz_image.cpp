// Fuzz target: data::load_image_folder on a folder with one image (PNG or
// JPEG by its bytes, decoded by stb_image, resized).
#include <filesystem>

#include "data/images.h"
#include "fuzz_input.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    namespace fs = std::filesystem;
    static const fs::path root = "/tmp/normcore-fuzz-images-" + std::to_string(getpid());
    static const bool made = fs::create_directories(root / "class");
    (void)made;
    std::FILE* f = std::fopen((root / "class" / "image.png").c_str(), "wb");
    if (!f) return 0;
    if (size > 0) std::fwrite(data, 1, size, f);
    std::fclose(f);
    try {
        nc::data::ImageSet set = nc::data::load_image_folder(root.string(), 8, 3);
        (void)set.images.to_vector();
    } catch (const nc::Error&) {
    }
    return 0;
}
