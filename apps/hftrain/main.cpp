#include "commands.h"

int main(int argc, char** argv) { return hftrain::app::run_app(argc, argv); }
