// Entry point: hands the command line to the cli module.
#include "headroom/cli/cli.h"

int main(int argc, char** argv) { return headroom::RunCli(argc, argv); }
