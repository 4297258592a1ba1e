#include <iostream>
#include <string>

int main() {
    std::ios::sync_with_stdio(false);
    std::cin.tie(nullptr);
    std::string line;
    std::getline(std::cin, line);
    int t = std::stoi(line);
    std::string out;
    for (int k = 0; k < t; ++k) {
        line.clear();
        std::getline(std::cin, line);
        int count = 0;
        for (char c : line) {
            switch (c) {
                case 'a': case 'e': case 'i': case 'o': case 'u':
                case 'A': case 'E': case 'I': case 'O': case 'U':
                    ++count;
                    break;
                default:
                    break;
            }
        }
        out += std::to_string(count);
        out += '\n';
    }
    std::cout << out;
    return 0;
}
