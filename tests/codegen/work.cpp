extern "C" void codegen_work(int* x) { *x += 1; }
