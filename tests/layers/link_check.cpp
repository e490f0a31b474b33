// Linked with the whole of one layer library and only the layers below it (CMakeLists.txt,
// motes_layer_check_<layer>): the link fails when the layer calls into a layer above it.
int main() { return 0; }
