#include <iostream>
#include <string>

int main() {
    std::ios::sync_with_stdio(false);
    std::cin.tie(nullptr);
    std::string line;
    std::getline(std::cin, line);
    int k = static_cast<int>(std::stoll(line) % 26);
    std::string s;
    std::getline(std::cin, s);
    for (char& c : s) {
        if (c >= 'a' && c <= 'z') c = static_cast<char>('a' + (c - 'a' - k + 26) % 26);
    }
    std::cout << s << '\n';
    return 0;
}
